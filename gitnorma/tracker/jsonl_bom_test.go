package tracker

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBOMAndConflictMarkers: an editor that starts the file with a byte-order mark leaves a
// backlog that is read as it reads; a merge conflict left in it is named as one.
func TestBOMAndConflictMarkers(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	id := mustCreate(t, j, NewTask{Title: "First"}).ID
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append([]byte("\uFEFF"), data...), 0o644))
	tasks, err := j.List(ctx)
	require.NoError(t, err, "a BOM makes line 1 malformed")
	require.Len(t, tasks, 1)
	require.NoError(t, j.SetStatus(ctx, id, StatusClosed, "done"))

	data, err = os.ReadFile(path)
	require.NoError(t, err)
	conflicted := "<<<<<<< HEAD\n" + string(data) + "=======\n" + string(data) + ">>>>>>> theirs\n"
	require.NoError(t, os.WriteFile(path, []byte(conflicted), 0o644))
	_, err = j.List(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "merge conflict")
}
