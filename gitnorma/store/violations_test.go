package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run's redo mark, fork point and pending guard are columns read back with the run; a
// violation is pending until cleared, a new one of the same run replaces it, and its times
// come back as they were taken (zone and nanoseconds: status --json prints them).
func TestRunFactsAndViolations(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r-1", Goal: "g", RunDir: "d", TaskID: "t-1", Redo: true}, nil))
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r-2", Goal: "g", RunDir: "d", TaskID: "t-1"}, nil))
	base := strings.Repeat("c", 64)
	require.NoError(t, s.SetForkPoint(ctx, "r-1", ForkPoint{Base: base, Target: "main", Started: true}))
	require.NoError(t, s.SetGuardPending(ctx, "r-2", true))
	r1, err := s.Run(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, []any{true, ForkPoint{Base: base, Target: "main", Started: true}, false}, []any{r1.Redo, r1.Fork, r1.GuardPending})
	r2, err := s.Run(ctx, "r-2")
	require.NoError(t, err)
	assert.Equal(t, []any{false, ForkPoint{}, true}, []any{r2.Redo, r2.Fork, r2.GuardPending})
	assert.Error(t, s.SetForkPoint(ctx, "r-2", ForkPoint{Base: "HEAD~1"}), "only an object id is a fork point")

	at := time.Date(2026, 11, 28, 17, 0, 0, 123456789, time.FixedZone("", 3600))
	require.NoError(t, s.RecordViolation(ctx, Violation{RunID: "r-2", TaskID: "t-1", Paths: []string{"a (restored)"}, At: at}))
	require.NoError(t, s.RecordViolation(ctx, Violation{RunID: "r-1", TaskID: "t-1", Paths: []string{"b"}, At: at}))
	pending, err := s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 2)
	assert.Equal(t, "r-1", pending[0].RunID, "by run id")
	assert.Equal(t, []string{"a (restored)"}, pending[1].Paths)
	assert.Equal(t, at.Format(time.RFC3339Nano), pending[1].At.Format(time.RFC3339Nano))

	require.NoError(t, s.ClearViolation(ctx, "r-1", at))
	pending, err = s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, "r-2", pending[0].RunID)
	require.NoError(t, s.RecordViolation(ctx, Violation{RunID: "r-1", TaskID: "t-1", Paths: []string{"c"}, At: at}))
	pending, err = s.PendingViolations(ctx)
	require.NoError(t, err)
	assert.Len(t, pending, 2, "a new violation of a cleared run is pending again")
	assert.Equal(t, []string{"c"}, pending[0].Paths, "in place of the one cleared")
	require.NoError(t, s.RecordViolation(ctx, Violation{RunID: "r-1", TaskID: "t-1", Paths: []string{"d (never looked at)", "c"}, At: at}))
	pending, err = s.PendingViolations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "d (never looked at)"}, pending[0].Paths, "added to the one the user has not seen yet")

	before, err := s.TaskRecords(ctx, "r-2", "t-1")
	require.NoError(t, err)
	require.NoError(t, s.ClearViolation(ctx, "r-2", at))
	after, err := s.TaskRecords(ctx, "r-2", "t-1")
	require.NoError(t, err)
	assert.NotEqual(t, before["r-2"], after["r-2"], "the guard sees a violation cleared behind its back")
	assert.Equal(t, before["r-1"], after["r-1"])
}

// A version-6 database, whose runs kept these facts as kv_run JSON, opens with each in its
// column or table; a value a hand edit broke is dropped, as the code before read it.
func TestMigrationOfTheLastKVFacts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "norma.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for i, m := range migrations[:6] {
		_, err = db.Exec(m)
		require.NoError(t, err)
		_, err = db.Exec(`INSERT INTO schema_migrations VALUES (?, 'x')`, i+1)
		require.NoError(t, err)
	}
	base := strings.Repeat("a", 40)
	_, err = db.Exec(`INSERT INTO runs(run_id, created_at, goal, status, run_dir, task_id) VALUES
			('r-1', '2026-01-01T00:00:00Z', 'g', 'passed', 'd', 't-1'),
			('r-2', '2026-01-02T00:00:00Z', 'g', 'running', 'd', 't-1'),
			('r-3', '2026-01-03T00:00:00Z', 'g', 'failed', 'd', 't-2'),
			('r-4', '2026-01-04T00:00:00Z', 'g', 'failed', 'd', 't-2'),
			('r-5', '2026-01-05T00:00:00Z', 'g', 'failed', 'd', 't-2'),
			('r-6', '2026-01-06T00:00:00Z', 'g', 'failed', 'd', 't-2');
		INSERT INTO kv_run(run_id, key, value_json) VALUES
			('r-1', 'redo', 'true'), ('r-1', 'fork_point', '{"base":"` + base + `","started":true,"target":"main"}'),
			('r-1', 'guard_violation', '{"task_id":"t-1","paths":["x (restored)"],"at":"2026-01-01T01:00:00.5+01:00","cleared_at":"2026-01-01T02:00:00Z"}'),
			('r-1', 'branch', '"norma/task/t-1"'),
			('r-2', 'redo', 'false'), ('r-2', 'fork_point', '{"base":"HEAD~1"}'), ('r-2', 'guard_pending', 'true'),
			('r-2', 'guard_violation', '{"task_id":"t-1","paths":["y"],"at":"2026-01-02T00:00:00.123456789Z"}'),
			('r-3', 'fork_point', 'not json'), ('r-3', 'guard_pending', 'false'),
			('r-3', 'guard_violation', '{"task_id":"t-2","paths":"z","at":"2026-01-03T00:00:00Z"}'),
			('r-4', 'guard_violation', '{"task_id":"t-2","paths":[1],"at":"2026-01-03T00:00:00Z"}'),
			('r-5', 'guard_violation', '{"task_id":"t-2","paths":["w"],"at":"2026-01-03 00:00:00"}'),
			('r-6', 'guard_violation', '{"task_id":"t-2","paths":null,"at":"2026-01-03T00:00:00.5-07:00"}');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	r1, err := s.Run(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, []any{true, ForkPoint{Base: base, Target: "main", Started: true}, false}, []any{r1.Redo, r1.Fork, r1.GuardPending})
	r2, err := s.Run(ctx, "r-2")
	require.NoError(t, err)
	assert.Equal(t, []any{false, ForkPoint{}, true}, []any{r2.Redo, r2.Fork, r2.GuardPending}, "a fork point that names no commit is dropped")
	r3, err := s.Run(ctx, "r-3")
	require.NoError(t, err)
	assert.Equal(t, []any{false, ForkPoint{}, false}, []any{r3.Redo, r3.Fork, r3.GuardPending})

	pending, err := s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 2, "r-1's was cleared; the old code could not read r-3's, r-4's or r-5's either")
	assert.Equal(t, Violation{RunID: "r-2", TaskID: "t-1", Paths: []string{"y"}}, Violation{RunID: pending[0].RunID, TaskID: pending[0].TaskID, Paths: pending[0].Paths})
	assert.Equal(t, "2026-01-02T00:00:00.123456789Z", pending[0].At.Format(time.RFC3339Nano))
	assert.Equal(t, []string{"r-6", "2026-01-03T00:00:00.5-07:00"}, []string{pending[1].RunID, pending[1].At.Format(time.RFC3339Nano)})
	assert.Empty(t, pending[1].Paths)

	for run, want := range map[string][]string{"r-1": {"branch"}, "r-2": nil, "r-3": nil, "r-4": nil} {
		kv, err := s.KV(ctx, run)
		require.NoError(t, err)
		var keys []string
		for k := range kv {
			keys = append(keys, k)
		}
		assert.Equal(t, want, keys, run)
	}
}

// A violation row that does not read — written by hand or by an unconfined agent with the
// foreign keys off — is pending all the same and hides no other: run and loop refuse, status
// and doctor show it, and resume clears it.
func TestUnreadableViolationIsPending(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r-1", Goal: "g", RunDir: "d", TaskID: "t-1"}, nil))
	at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	require.NoError(t, s.RecordViolation(ctx, Violation{RunID: "r-1", TaskID: "t-1", Paths: []string{"a"}, At: at}))
	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = raw.Exec(`INSERT INTO guard_violations(run_id, task_id, paths_json, at) VALUES ('r-0', '', '[1]', 'junk')`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	pending, err := s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 2)
	assert.Equal(t, []string{"r-0", "[1]"}, []string{pending[0].RunID, pending[0].Paths[0]})
	assert.True(t, pending[0].At.IsZero())
	assert.Equal(t, "r-1", pending[1].RunID)
	require.NoError(t, s.ClearViolation(ctx, "r-0", at))
	pending, err = s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
}

// An older git-norma still running when a newer one migrated the store writes its violation,
// redo, fork point and pending guard as kv_run rows: the next Open carries them into their
// columns (the rows stay, for the old process reads them), each once, and a row it cannot
// read is left as migration 7 leaves it.
func TestOpenCarriesAnOlderGitNormasRecords(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	for _, id := range []string{"r-1", "r-2", "r-3"} {
		require.NoError(t, s.CreateRun(ctx, Run{ID: id, Goal: "g", RunDir: "d", TaskID: "t-1"}, nil))
	}
	require.NoError(t, s.FinishRun(ctx, "r-3", StatusFailed, "", "", time.Time{}))
	base := strings.Repeat("a", 40)
	for _, kv := range [][3]string{
		{"r-1", "redo", `true`}, {"r-1", "fork_point", `{"base":"` + base + `","started":true,"target":"main"}`},
		{"r-1", "guard_pending", `true`},
		{"r-1", "guard_violation", `{"task_id":"t-1","paths":["tracked.txt (not restored)"],"at":"2026-11-28T16:56:45.5Z"}`},
		{"r-2", "fork_point", `{"base":"HEAD~1"}`}, {"r-2", "guard_violation", `{"paths":"z"}`},
		{"r-3", "guard_pending", `true`},
	} {
		_, err := s.db.ExecContext(ctx, `INSERT INTO kv_run(run_id, key, value_json) VALUES (?, ?, ?)`, kv[0], kv[1], kv[2])
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	r1, err := s.Run(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, []any{true, ForkPoint{Base: base, Target: "main", Started: true}, true}, []any{r1.Redo, r1.Fork, r1.GuardPending})
	r2, err := s.Run(ctx, "r-2")
	require.NoError(t, err)
	assert.Equal(t, []any{false, ForkPoint{}, false}, []any{r2.Redo, r2.Fork, r2.GuardPending})
	r3, err := s.Run(ctx, "r-3")
	require.NoError(t, err)
	assert.False(t, r3.GuardPending, "a finished run awaits no guard")
	pending, err := s.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, []any{"r-1", "t-1", []string{"tracked.txt (not restored)"}, "2026-11-28T16:56:45.5Z"},
		[]any{pending[0].RunID, pending[0].TaskID, pending[0].Paths, pending[0].At.Format(time.RFC3339Nano)})
	kv, err := s.KV(ctx, "r-1")
	require.NoError(t, err)
	assert.Len(t, kv, 4, "the old process reads its rows back")

	// carried once: cleared and looked after since, they are not carried again
	require.NoError(t, s.ClearViolation(ctx, "r-1", time.Now()))
	require.NoError(t, s.SetGuardPending(ctx, "r-1", false))
	require.NoError(t, s.FinishRun(ctx, "r-1", StatusStopped, "", "crashed", time.Time{}))
	require.NoError(t, s.Close())
	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	pending, err = s.PendingViolations(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending)
	r1, err = s.Run(ctx, "r-1")
	require.NoError(t, err)
	assert.False(t, r1.GuardPending)
}
