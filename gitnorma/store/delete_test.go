package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeleteRunCascadesAndSparesRunning(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "norma.db"))
	require.NoError(t, err)
	defer s.Close()
	now := time.Now()
	for _, id := range []string{"r-old", "r-live"} {
		require.NoError(t, s.CreateRun(ctx, Run{ID: id, CreatedAt: now, Goal: "g", RunDir: "d", TaskID: "norma-a"}, nil))
	}
	require.NoError(t, s.CommitStep(ctx, StepCommit{Step: Step{RunID: "r-old", Index: 1, Role: "plan", Iteration: 1, Status: "ok", Dir: "d", StartedAt: now}, Iteration: 1, CurrentStepIndex: 1}))
	require.NoError(t, s.FinishRun(ctx, "r-old", StatusStopped, "", "x", now))

	require.NoError(t, s.DeleteRun(ctx, "r-old"))
	_, err = s.Run(ctx, "r-old")
	assert.ErrorIs(t, err, ErrNotFound)
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT (SELECT count(*) FROM steps) + (SELECT count(*) FROM events WHERE run_id='r-old') + (SELECT count(*) FROM kv_run WHERE run_id='r-old')`).Scan(&n))
	assert.Zero(t, n)

	assert.ErrorIs(t, s.DeleteRun(ctx, "r-live"), ErrNotFound, "a running run is never deleted")
	_, err = s.Run(ctx, "r-live")
	assert.NoError(t, err)
	ok, err := s.IntegrityCheck(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ok", ok)
}
