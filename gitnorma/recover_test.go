package gitnorma

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
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

// A run that ended but died before giving its claim back leaves the task in progress; the
// next loop's recovery reopens it, however many checks of the task (runs too) came since.
func TestRecoveryReopensAClaimPastManyLaterChecks(t *testing.T) {
	ctx := context.Background()
	a, _ := initApp(t)
	tr, err := a.Tracker()
	require.NoError(t, err)
	task, err := tr.Create(ctx, tracker.NewTask{Title: "claimed by a run that died"})
	require.NoError(t, err)
	_, err = tr.Claim(ctx, task.ID, "")
	require.NoError(t, err)
	st := openStore(t, a)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dead := "r-20260101-000000-000-000000"
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: dead, Goal: "g", RunDir: ".norma/runs/" + dead, TaskID: task.ID,
		Status: store.StatusFailed, CreatedAt: at}, nil))
	require.NoError(t, st.SetClaim(ctx, dead, store.ClaimHeld))
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("r-20260101-000000-000-00000%d", i)
		require.NoError(t, st.CreateRun(ctx, store.Run{ID: id, Kind: store.KindCheck, Goal: "check", RunDir: ".norma/runs/" + id, TaskID: task.ID,
			Status: store.StatusFailed, CreatedAt: at.Add(time.Duration(i) * time.Minute)}, nil))
	}

	require.NoError(t, a.recoverCrashed(ctx, st, "main", true, nil))
	got, err := tr.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, tracker.StatusOpen, got.Status)
	run, err := st.Run(ctx, dead)
	require.NoError(t, err)
	assert.Equal(t, store.ClaimReleased, run.Claim)
}

// Recovery commits a dead run's uncommitted work onto its task branch under the landing lock,
// as every move of a task branch by git-norma: an unconfined step's fallback guard (or a
// landing re-checking under it) holds that lock and takes a task branch moved meanwhile by no
// live run for its agent's doing, and moves it back. While the lock is held, the branch stays.
func TestRecoveryRescuesUnderTheLandingLock(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	tr, err := a.Tracker()
	require.NoError(t, err)
	task, err := tr.Create(ctx, tracker.NewTask{Title: "passed by a run that died"})
	require.NoError(t, err)
	_, err = tr.Claim(ctx, task.ID, "")
	require.NoError(t, err)
	branch := "refs/heads/norma/task/" + task.ID
	repo.Must("branch", "norma/task/"+task.ID)
	head := repo.Must("rev-parse", branch)
	st := openStore(t, a)
	dead := "r-20260101-000000-000-000001"
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: dead, Goal: "g", RunDir: ".norma/runs/" + dead, TaskID: task.ID, Status: store.StatusPassed}, nil))
	require.NoError(t, st.SetClaim(ctx, dead, store.ClaimHeld))
	ws := a.Repo.Path("runs", dead, "workspace")
	repo.Must("worktree", "add", "-q", ws, "norma/task/"+task.ID)
	require.NoError(t, os.WriteFile(filepath.Join(ws, "wip.txt"), []byte("the dead run's uncommitted work\n"), 0o600))

	unlock, err := flock.Wait(ctx, a.Repo.Path("locks", "land.lock")) // an unconfined step's guard
	require.NoError(t, err)
	waiting, done := make(chan struct{}), make(chan error, 1)
	live := func(l loop.Live) {
		if strings.HasPrefix(l.Text, "waiting to ") {
			close(waiting)
		}
	}
	go func() { done <- a.recoverCrashed(ctx, st, "main", true, live) }()
	select {
	case <-waiting:
	case err := <-done:
		unlock()
		t.Fatalf("recovery did not wait for the landing lock (err %v); the branch went from %.10s to %.10s", err, head, repo.Must("rev-parse", branch))
	}
	assert.Equal(t, head, repo.Must("rev-parse", branch), "moved while the guard held the landing lock")
	unlock()
	require.NoError(t, <-done)
	assert.NotEqual(t, head, repo.Must("rev-parse", branch), "the dead run's work is saved on its branch")
	assert.NoDirExists(t, ws)
}
