package tracker

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSymlinkedBacklogIsRefused: a .beads/issues.jsonl that is a symbolic link is neither
// replaced by a regular file (the backlog it names would miss the claim: another checkout of it
// would pick the task again) nor written through (a link a pull brought in would have git-norma
// write outside the repository): the write is refused, saying what to do, and both files stay.
func TestSymlinkedBacklogIsRefused(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	id := mustCreate(t, j, NewTask{Title: "Shared"}).ID
	target := filepath.Join(t.TempDir(), "shared.jsonl")
	require.NoError(t, os.Rename(path, target))
	require.NoError(t, os.Symlink(target, path))
	before, err := os.ReadFile(target)
	require.NoError(t, err)

	_, err = j.Claim(ctx, id, "me")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symbolic link: git-norma writes the backlog only as a regular file")
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link was replaced")
	after, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "written through the link")
}

// The same holds for a .beads directory that is a symbolic link.
func TestSymlinkedBacklogDirIsRefused(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	id := mustCreate(t, j, NewTask{Title: "Shared"}).ID
	dir := filepath.Dir(path)
	elsewhere := filepath.Join(t.TempDir(), "beads")
	require.NoError(t, os.Rename(dir, elsewhere))
	require.NoError(t, os.Symlink(elsewhere, dir))
	before, err := os.ReadFile(filepath.Join(elsewhere, "issues.jsonl"))
	require.NoError(t, err)

	_, err = j.Claim(ctx, id, "me")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a symbolic link")
	after, err := os.ReadFile(filepath.Join(elsewhere, "issues.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "written through the directory's link")
}
