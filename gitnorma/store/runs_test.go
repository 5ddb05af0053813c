package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func mustCreate(t *testing.T, s *Store, id, task string, at time.Time) {
	t.Helper()
	require.NoError(t, s.CreateRun(context.Background(),
		Run{ID: id, Goal: "goal " + id, RunDir: ".norma/runs/" + id, CreatedAt: at, TaskID: task}, nil))
}

func TestCreateRunRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r1", Goal: "fix login", RunDir: "/x/r1", CreatedAt: t0,
		TaskID: "norma-01"}, map[string]any{"target_branch": "main", "owner_pid": 42}))

	r, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, Run{ID: "r1", Kind: KindRun, CreatedAt: t0, Goal: "fix login", Status: StatusRunning, RunDir: "/x/r1",
		TaskID: "norma-01"}, r)

	kv, err := s.KV(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, map[string]json.RawMessage{
		"target_branch": json.RawMessage(`"main"`), "owner_pid": json.RawMessage(`42`),
	}, kv)

	ev, err := s.Events(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, ev, 1)
	assert.Equal(t, "run_started", ev[0].Type)
	assert.Equal(t, 1, ev[0].Seq)
	assert.True(t, ev[0].TS.Equal(t0))
	assert.JSONEq(t, `{"run_dir":"/x/r1","task_id":"norma-01"}`, ev[0].DataJSON)

	err = s.CreateRun(ctx, Run{ID: "r1", Goal: "dup", RunDir: "d"}, nil)
	assert.Error(t, err, "duplicate run id")

	_, err = s.Run(ctx, "nope")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestFinishRunAndKV(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "norma-01", t0)
	require.NoError(t, s.SetLanded(ctx, "r1", strings.Repeat("a", 40)))
	require.NoError(t, s.SetLanded(ctx, "r1", strings.Repeat("d", 40)))
	require.NoError(t, s.CommitStep(ctx, StepCommit{Step: Step{RunID: "r1", Index: 3, Role: "check",
		Iteration: 1, Status: "ok", Dir: "d", StartedAt: t0}, Verdict: "FAIL", Iteration: 1, CurrentStepIndex: 3}))

	end := t0.Add(time.Hour)
	require.NoError(t, s.FinishRun(ctx, "r1", StatusStopped, "", "budget_exceeded", end,
		Event{Type: "run_stopped", Message: "budget"}))
	r, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, StatusStopped, r.Status)
	assert.Equal(t, "FAIL", r.Verdict, "empty verdict keeps the previous one")
	assert.Equal(t, "budget_exceeded", r.StopReason)
	assert.True(t, r.EndedAt.Equal(end))

	require.NoError(t, s.FinishRun(ctx, "r1", StatusPassed, "PASS", "", end))
	r, err = s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, "PASS", r.Verdict)

	assert.Equal(t, strings.Repeat("d", 40), r.LandedCommit)
	assert.Error(t, s.SetLanded(ctx, "r1", "def"), "the column takes object ids only")

	assert.ErrorIs(t, s.FinishRun(ctx, "nope", StatusFailed, "", "", end), ErrNotFound)
	assert.Error(t, s.SetKV(ctx, "nope", "k", 1), "foreign key")
}

func TestCheckConstraints(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "", t0)
	step := func(role, status string) StepCommit {
		return StepCommit{Step: Step{RunID: "r1", Index: 1, Role: role, Iteration: 1, Status: status,
			Dir: "d", StartedAt: t0}}
	}
	tests := []struct {
		name string
		do   func() error
	}{
		{"run status", func() error { return s.CreateRun(ctx, Run{ID: "r2", Status: "done", RunDir: "d"}, nil) }},
		{"run verdict", func() error {
			return s.CreateRun(ctx, Run{ID: "r3", Verdict: "MAYBE", RunDir: "d"}, nil)
		}},
		{"finish status", func() error { return s.FinishRun(ctx, "r1", "exploded", "", "", t0) }},
		{"finish verdict", func() error { return s.FinishRun(ctx, "r1", StatusFailed, "pass", "", t0) }},
		{"step role", func() error { return s.CommitStep(ctx, step("review", "ok")) }},
		{"step status", func() error { return s.CommitStep(ctx, step("plan", "done")) }},
		{"commit verdict", func() error {
			c := step("check", "ok")
			c.Verdict = "ok"
			return s.CommitStep(ctx, c)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			require.Error(t, err)
			assert.Contains(t, strings.ToLower(err.Error()), "constraint")
		})
	}
	runs, err := s.RecentRuns(ctx, 0)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, StatusRunning, runs[0].Status)
	assert.Empty(t, runs[0].Verdict)
	steps, err := s.Steps(ctx, "r1")
	require.NoError(t, err)
	assert.Empty(t, steps)
}

func TestCascadingDelete(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	mustCreate(t, s, "r1", "norma-1", t0)
	mustCreate(t, s, "r2", "norma-1", t0)
	for _, id := range []string{"r1", "r2"} {
		require.NoError(t, s.SetKV(ctx, id, "fork_point", "x"))
	}
	require.NoError(t, s.CommitStep(ctx, StepCommit{Step: Step{RunID: "r1", Index: 1, Role: "plan",
		Iteration: 1, Status: "ok", Dir: "d", StartedAt: t0}, Events: []Event{{Type: "x", Message: "m"}}}))

	_, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE run_id = 'r1'`)
	require.NoError(t, err)
	for _, table := range []string{"steps", "events", "kv_run"} {
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx,
			fmt.Sprintf(`SELECT count(*) FROM %s WHERE run_id = 'r1'`, table)).Scan(&n))
		assert.Zero(t, n, table)
		require.NoError(t, s.db.QueryRowContext(ctx,
			fmt.Sprintf(`SELECT count(*) FROM %s WHERE run_id = 'r2'`, table)).Scan(&n))
		if table != "steps" {
			assert.NotZero(t, n, "other run's %s must survive", table)
		}
	}
}

func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

func TestRunListings(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for i := range 6 {
		task := "norma-a"
		if i%2 == 1 {
			task = "norma-b"
		}
		mustCreate(t, s, fmt.Sprintf("r%d", i), task, t0.Add(time.Duration(i)*time.Minute))
	}
	require.NoError(t, s.FinishRun(ctx, "r2", StatusPassed, "PASS", "", t0))
	require.NoError(t, s.SetClaim(ctx, "r1", ClaimHeld))
	require.NoError(t, s.SetClaim(ctx, "r3", ClaimReleased))
	require.NoError(t, s.SetClaim(ctx, "r4", ClaimHeld))
	ids := func(rs []Run) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}

	tests := []struct {
		name string
		get  func() ([]Run, error)
		want []string
	}{
		{"recent limited", func() ([]Run, error) { return s.RecentRuns(ctx, 3) }, []string{"r5", "r4", "r3"}},
		{"recent all", func() ([]Run, error) { return s.RecentRuns(ctx, 0) },
			[]string{"r5", "r4", "r3", "r2", "r1", "r0"}},
		{"task a", func() ([]Run, error) { return s.RunsForTask(ctx, "norma-a", 0) }, []string{"r4", "r2", "r0"}},
		{"task b limited", func() ([]Run, error) { return s.RunsForTask(ctx, "norma-b", 2) }, []string{"r5", "r3"}},
		{"unknown task", func() ([]Run, error) { return s.RunsForTask(ctx, "norma-z", 5) }, nil},
		{"running", func() ([]Run, error) { return s.RunsWithStatus(ctx, StatusRunning) },
			[]string{"r5", "r4", "r3", "r1", "r0"}},
		{"passed", func() ([]Run, error) { return s.RunsWithStatus(ctx, StatusPassed) }, []string{"r2"}},
		{"claimed", func() ([]Run, error) { return s.RunsWithClaim(ctx, ClaimHeld) }, []string{"r4", "r1"}},
		{"intent", func() ([]Run, error) { return s.RunsWithClaim(ctx, ClaimIntent) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := tt.get()
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(rs))
			for _, r := range rs {
				assert.NotEmpty(t, r.TaskID, "the task column is read")
			}
		})
	}

	plan := queryPlan(t, s, recentRunsQuery, 3)
	assert.Contains(t, plan, "idx_runs_created_at", plan)
	assert.NotContains(t, plan, "TEMP B-TREE", plan)

	plan = queryPlan(t, s, runsForTaskQuery, "norma-a", 3)
	assert.Contains(t, plan, "idx_runs_task_id", plan)
	assert.NotContains(t, plan, "SCAN", plan)
	assert.NotContains(t, plan, "TEMP B-TREE", plan)

	plan = queryPlan(t, s, runsWithStatusQuery, StatusRunning)
	assert.Contains(t, plan, "idx_runs_status", plan)

	plan = queryPlan(t, s, runsWithClaimQuery, ClaimHeld)
	assert.Contains(t, plan, "idx_runs_claim", plan)
}

func TestRecordPass(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r1", Goal: "g", RunDir: "d"}, nil))
	r, err := s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Empty(t, r.PassHead+r.PassTree, "no PASS recorded yet")
	assert.Equal(t, KindRun, r.Kind)

	head, want := strings.Repeat("a", 40), strings.Repeat("b", 40)
	require.NoError(t, s.RecordPass(ctx, "r1", head, want))
	r, err = s.Run(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, head, r.PassHead)
	assert.Equal(t, want, r.PassTree)

	assert.Error(t, s.RecordPass(ctx, "r1", head, "not a tree id"), "the column takes object ids only")
	assert.ErrorIs(t, s.RecordPass(ctx, "nope", head, want), ErrNotFound)
}
