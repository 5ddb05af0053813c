package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func stepCommit(index int, role string, events ...Event) StepCommit {
	return StepCommit{
		Step: Step{RunID: "r1", Index: index, Role: role, Iteration: (index-1)/4 + 1, Status: "ok",
			Dir: "steps/" + role, StartedAt: t0, EndedAt: t0.Add(time.Second), Summary: "did " + role},
		Events:           events,
		Iteration:        (index-1)/4 + 1,
		CurrentStepIndex: index,
	}
}

func TestCommitStep(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "", t0)

	c := stepCommit(1, "plan", Event{Type: "step_committed", Message: "plan ok", Data: map[string]int{"n": 1}})
	require.NoError(t, s.CommitStep(ctx, c))
	c = stepCommit(3, "check", Event{Type: "step_committed", Message: "check ok"}, Event{Type: "verdict", Message: "PASS"})
	c.Step.EndedAt, c.Step.Summary = time.Time{}, ""
	c.Verdict, c.Status = "PASS", StatusPassed
	require.NoError(t, s.CommitStep(ctx, c))

	steps, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	assert.Equal(t, stepCommit(1, "plan").Step, steps[0])
	assert.Equal(t, c.Step, steps[1], "zero EndedAt and empty Summary round-trip as NULL")

	r, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, 3, r.CurrentStepIndex)
	assert.Equal(t, 1, r.Iteration)
	assert.Equal(t, "PASS", r.Verdict)
	assert.Equal(t, StatusPassed, r.Status)

	ev, err := s.Events(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, ev, 4)
	assert.Equal(t, []string{"run_started", "step_committed", "step_committed", "verdict"},
		[]string{ev[0].Type, ev[1].Type, ev[2].Type, ev[3].Type})
	assert.JSONEq(t, `{"n":1}`, ev[1].DataJSON)
	assert.Empty(t, ev[2].DataJSON)
}

// Run metadata committed with a step changes with it: set when the step commits, absent when
// it fails.
func TestCommitStepSetsKV(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "", t0)
	c := stepCommit(1, "plan")
	c.KV = map[string]any{"last_plan": map[string]string{"goal": "g"}}
	require.NoError(t, s.CommitStep(ctx, c))
	c = stepCommit(2, "check")
	c.Verdict = "meh" // the run update fails, after the kv upserts
	c.KV = map[string]any{"last_plan": "other", "last_check": "x"}
	require.Error(t, s.CommitStep(ctx, c))

	kv, err := s.KV(ctx, "r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"goal":"g"}`, string(kv["last_plan"]))
	assert.NotContains(t, kv, "last_check")
}

func TestCommitStepFailureLeavesNothing(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		commit StepCommit
	}{
		{"duplicate step index", stepCommit(1, "do", Event{Type: "step_committed", Message: "dup"})},
		{"unencodable event data", stepCommit(2, "do", Event{Type: "x", Message: "m", Data: make(chan int)})},
		{"bad raw event json", stepCommit(2, "do", Event{Type: "x", Message: "m", DataJSON: "{"})},
		{"event for another run", stepCommit(2, "do", Event{RunID: "r2", Type: "x", Message: "m"})},
		{"bad verdict", func() StepCommit { c := stepCommit(2, "check"); c.Verdict = "meh"; return c }()},
		{"unknown run", func() StepCommit { c := stepCommit(2, "do"); c.Step.RunID = "zz"; return c }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openTemp(t)
			mustCreate(t, s, "r1", "", t0)
			require.NoError(t, s.CommitStep(ctx, stepCommit(1, "plan", Event{Type: "a", Message: "b"})))

			tt.commit.CurrentStepIndex, tt.commit.Iteration = 99, 98
			require.Error(t, s.CommitStep(ctx, tt.commit))

			steps, err := s.Steps(ctx, "r1")
			require.NoError(t, err)
			assert.Len(t, steps, 1)
			assert.Equal(t, "plan", steps[0].Role)
			ev, err := s.Events(ctx, "r1")
			require.NoError(t, err)
			assert.Len(t, ev, 2, "no events from the failed commit")
			r, err := s.Run(ctx, "r1")
			require.NoError(t, err)
			assert.Equal(t, 1, r.CurrentStepIndex, "cursor unchanged")
			assert.Equal(t, 1, r.Iteration)
			assert.Empty(t, r.Verdict)
			// The connection must be usable (no transaction left open).
			require.NoError(t, s.AppendEvent(ctx, "r1", Event{Type: "after", Message: "m"}))
		})
	}
}

func TestEventSeqMonotonic(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "", t0)
	mustCreate(t, s, "r2", "", t0)
	require.NoError(t, s.AppendEvent(ctx, "r1", Event{Type: "a", Message: "1"}))
	require.NoError(t, s.CommitStep(ctx, stepCommit(1, "plan", Event{Type: "b", Message: "2"}, Event{Type: "c", Message: "3", Seq: 77})))
	require.NoError(t, s.AppendEvent(ctx, "r2", Event{Type: "other", Message: "x"}))
	require.NoError(t, s.AppendEvent(ctx, "r1", Event{Type: "d", Message: "4"}))
	require.NoError(t, s.FinishRun(ctx, "r1", StatusFailed, "FAIL", "verify_missing", t0,
		Event{Type: "e", Message: "5"}, Event{Type: "f", Message: "6"}))

	ev, err := s.Events(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, ev, 7)
	for i, e := range ev {
		assert.Equal(t, i+1, e.Seq)
		assert.Equal(t, "r1", e.RunID)
	}
	ev2, err := s.Events(ctx, "r2")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, []int{ev2[0].Seq, ev2[1].Seq}, "seq is per run")
}

func TestReconcileStep(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "", t0)
	require.NoError(t, s.CommitStep(ctx, stepCommit(1, "plan")))

	tests := []struct {
		index         int
		role          string
		wantIteration int
	}{
		{2, "do", 1}, {4, "act", 1}, {5, "plan", 2}, {9, "plan", 3},
	}
	for _, tt := range tests {
		for range 2 { // second call must be a no-op
			require.NoError(t, s.ReconcileStep(ctx, "r1", tt.index, tt.role, "steps/x", t0))
		}
	}
	// Existing committed rows are never overwritten.
	require.NoError(t, s.ReconcileStep(ctx, "r1", 1, "plan", "other", t0))

	steps, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 5)
	assert.Equal(t, "ok", steps[0].Status)
	assert.Equal(t, "steps/plan", steps[0].Dir)
	for i, tt := range tests {
		st := steps[i+1]
		assert.Equal(t, tt.index, st.Index)
		assert.Equal(t, tt.role, st.Role)
		assert.Equal(t, tt.wantIteration, st.Iteration)
		assert.Equal(t, "fail", st.Status)
		assert.True(t, st.EndedAt.IsZero())
	}

	ev, err := s.Events(ctx, "r1")
	require.NoError(t, err)
	var rec []Event
	for _, e := range ev {
		if e.Type == "reconciled_step" {
			rec = append(rec, e)
		}
	}
	require.Len(t, rec, len(tests))
	assert.Equal(t, "Step dir exists but DB record was missing; inserted during recovery", rec[0].Message)
	assert.JSONEq(t, `{"step_index":2,"role":"do","step_dir":"steps/x"}`, rec[0].DataJSON)

	r, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, 9, r.CurrentStepIndex)
	assert.Empty(t, r.Verdict, "reconciliation never guesses a verdict")

	assert.Error(t, s.ReconcileStep(ctx, "r1", 0, "plan", "d", t0))
	assert.Error(t, s.ReconcileStep(ctx, "nope", 1, "plan", "d", t0))
}

// TestStepOutputKept: a step's output comes back with its row; the column takes JSON only, and
// a step without one (reconciled after a crash) has none.
func TestStepOutputKept(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "norma-1", t0)
	step := func(i int, output string) StepCommit {
		return StepCommit{Step: Step{RunID: "r1", Index: i, Role: "do", Iteration: 1, Status: "ok", Dir: "d",
			StartedAt: t0, Output: output}, Iteration: 1, CurrentStepIndex: i}
	}
	require.NoError(t, s.CommitStep(ctx, step(1, `{"status":"ok","usage":{"input_tokens":3}}`)))
	require.Error(t, s.CommitStep(ctx, step(2, `{"status":`)), "not JSON")
	require.NoError(t, s.ReconcileStep(ctx, "r1", 2, "check", "d2", t0))
	steps, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, steps, 2)
	assert.JSONEq(t, `{"status":"ok","usage":{"input_tokens":3}}`, steps[0].Output)
	assert.Empty(t, steps[1].Output)
}
