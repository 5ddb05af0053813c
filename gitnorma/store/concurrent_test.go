package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two Stores on one file stand in for two git-norma processes: each has its
// own connection, so only SQLite locking (BEGIN IMMEDIATE + busy_timeout)
// keeps them from losing writes or failing with SQLITE_BUSY.
func TestConcurrentStoresOnSameFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "norma.db")

	// Open both at once to also exercise concurrent first-time migration.
	stores := make([]*Store, 2)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := Open(ctx, path)
			if assert.NoError(t, err) {
				stores[i] = s
			}
		})
	}
	wg.Wait()
	for _, s := range stores {
		require.NotNil(t, s)
		t.Cleanup(func() { _ = s.Close() })
	}
	mustCreate(t, stores[0], "r1", "norma-1", t0)

	const workers, perWorker = 4, 25
	var stepIdx atomic.Int64
	errs := make(chan error, len(stores)*workers*perWorker*3)
	for si, s := range stores {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					errs <- s.AppendEvent(ctx, "r1", Event{Type: "ev", Message: fmt.Sprintf("%d/%d/%d", si, w, i)})
					idx := int(stepIdx.Add(1))
					errs <- s.CommitStep(ctx, StepCommit{Step: Step{RunID: "r1", Index: idx, Role: "do",
						Iteration: 1, Status: "ok", Dir: "d", StartedAt: t0},
						Events: []Event{{Type: "step_committed", Message: "m"}}, CurrentStepIndex: idx})
					errs <- s.SetKV(ctx, "r1", fmt.Sprintf("k%d-%d", si, w), i)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	total := len(stores) * workers * perWorker
	ev, err := stores[1].Events(ctx, "r1")
	require.NoError(t, err)
	require.Len(t, ev, 1+2*total)
	for i, e := range ev {
		assert.Equal(t, i+1, e.Seq, "seq must be gap-free")
	}
	steps, err := stores[0].Steps(ctx, "r1")
	require.NoError(t, err)
	assert.Len(t, steps, total)
	kv, err := stores[0].KV(ctx, "r1")
	require.NoError(t, err)
	assert.Len(t, kv, len(stores)*workers)
	assert.Equal(t, fmt.Sprint(perWorker-1), string(kv["k1-3"]))

	var n int
	require.NoError(t, stores[0].db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n))
	assert.Equal(t, SchemaVersion, n, "concurrent opens migrate once")
}
