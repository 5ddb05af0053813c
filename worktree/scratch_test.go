package worktree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scratch worktree left by a killed process is cleared, so it can be added again; so is a
// bare directory at its place, and nothing is done where nothing is left.
func TestClearScratch(t *testing.T) {
	f := newFixture(t)
	head := f.rev("HEAD")
	path := filepath.Join(t.TempDir(), "recheck", "workspace")

	removed, err := f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.False(t, removed)

	require.NoError(t, f.m.AddScratch(f.ctx, path, head))
	require.NoError(t, os.WriteFile(filepath.Join(path, "built.o"), []byte("x"), 0o600))
	require.Error(t, f.m.AddScratch(f.ctx, path, head), "git refuses a path that exists")
	removed, err = f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.True(t, removed)
	assert.NotContains(t, f.git("worktree", "list", "--porcelain"), path)
	require.NoError(t, f.m.AddScratch(f.ctx, path, head), "added again")
	require.NoError(t, f.m.RemoveScratch(f.ctx, path))

	require.NoError(t, os.MkdirAll(filepath.Join(path, "sub"), 0o700))
	removed, err = f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.True(t, removed)
	require.NoError(t, f.m.AddScratch(f.ctx, path, head))
}
