package gitnorma

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// claimedBy takes a claim for a dead run's only when the store says the run holds it, or the
// run meant to claim and the claim's assignee is the one ours leaves: never a claim a person or
// another tool made (another assignee), never a task that is not in progress.
func TestClaimedByTellsOurClaimFromOthers(t *testing.T) {
	ctx := context.Background()
	a, _ := initApp(t)
	a.Config.Tracker = "jsonl"
	run := func(claim string) store.Run {
		return store.Run{ID: "r-" + claim, Status: store.StatusRunning, TaskID: "norma-t1", Claim: claim}
	}
	held, given, intent, none := run(store.ClaimHeld), run(store.ClaimReleased), run(store.ClaimIntent), run("")
	intentAsW1 := run(store.ClaimIntent)
	intentAsW1.Actor = "w1"
	task := func(status, assignee string) tracker.Task {
		return tracker.Task{ID: "norma-t1", Status: status, Assignee: assignee}
	}

	tests := []struct {
		name  string
		run   store.Run
		task  tracker.Task
		ours  bool
		actor string
	}{
		{"recorded claim", held, task(tracker.StatusInProgress, ""), true, ""},
		{"recorded claim, task moved on", held, task(tracker.StatusClosed, ""), false, ""},
		{"claim given back", given, task(tracker.StatusInProgress, ""), false, ""},
		{"intent, unassigned as our jsonl claim leaves it", intent, task(tracker.StatusInProgress, ""), true, ""},
		{"intent, a person's claim", intent, task(tracker.StatusInProgress, "alice"), false, ""},
		{"intent, task open", intent, task(tracker.StatusOpen, ""), false, ""},
		{"no intent, no claim", none, task(tracker.StatusInProgress, ""), false, ""},
		{"bd: intent, our actor", intent, task(tracker.StatusInProgress, "Norma Bot"), true, "Norma Bot"},
		{"bd: intent, another actor", intent, task(tracker.StatusInProgress, "alice"), false, "Norma Bot"},
		{"bd: intent, unassigned", intent, task(tracker.StatusInProgress, ""), false, "Norma Bot"},
		{"bd: intent, the worker the run recorded", intentAsW1, task(tracker.StatusInProgress, "w1"), true, "Norma Bot"},
		{"bd: intent, this process's actor but not the run's", intentAsW1, task(tracker.StatusInProgress, "Norma Bot"), false, "Norma Bot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a.Config.Tracker = "jsonl"
			if tt.actor != "" {
				a.Config.Tracker = "beads"
				t.Setenv("BEADS_ACTOR", tt.actor)
			}
			assert.Equal(t, tt.ours, a.claimedBy(ctx, tt.run, tt.task))
		})
	}
}
