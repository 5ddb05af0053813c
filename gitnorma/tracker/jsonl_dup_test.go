package tracker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDuplicateIDRefused: a merge that keeps both versions of a task's line (a union merge
// driver, or a conflict resolved by keeping both sides) leaves the same id twice, one of them
// closed. Selection must not offer the task from its open copy, and a claim must not start a
// run on it: the backlog names both lines and says to keep one.
func TestDuplicateIDRefused(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.WithIndex(filepath.Join(t.TempDir(), "heads"), noVerify)
	id := mustCreate(t, j, NewTask{Title: "Shared"}).ID
	open, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, j.SetStatus(ctx, id, StatusClosed, "done by a teammate"))
	closed, err := os.ReadFile(path)
	require.NoError(t, err)
	// Ours (still open) first, theirs (closed) after it.
	require.NoError(t, os.WriteFile(path, append(open, closed...), 0o644))

	heads, err := j.Heads(ctx)
	if err == nil {
		for _, h := range heads {
			assert.False(t, h.ID == id && h.Ready, "a task closed in one of its two lines is offered as ready")
		}
		t.Fatalf("Heads accepted task %s twice", id)
	}
	assert.Contains(t, err.Error(), id)
	assert.Contains(t, err.Error(), "lines 1 and 2")

	_, err = j.Claim(ctx, id, "me")
	require.Error(t, err, "claimed a task whose other line says closed")
	assert.True(t, strings.Contains(err.Error(), "lines 1 and 2"), err.Error())

	ready, err := j.Ready(ctx)
	require.Error(t, err)
	assert.Empty(t, ready)
}
