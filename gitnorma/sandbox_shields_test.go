package gitnorma

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// An allow_write path that reaches the repository through a symbolic link opens it as much as
// its real path does: Landlock follows the link.
func TestShieldsSeesThroughLinks(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	root := filepath.Join(data, "work", "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
	link := filepath.Join(base, "home-work")
	require.NoError(t, os.Symlink(filepath.Join(data, "work"), link))
	repo := &Repo{Root: root, GitDir: filepath.Join(root, ".git")}
	c := confinement{mode: sandbox.ModeAuto, abi: 7}

	for _, allow := range [][]string{{filepath.Join(data, "work")}, {link}, {filepath.Join(link, "repo", ".git")}} {
		assert.False(t, confiner{cfg: config.Sandbox{AllowWrite: allow}, repo: repo}.shields(c), "allow_write %v", allow)
	}
	assert.True(t, confiner{cfg: config.Sandbox{AllowWrite: []string{filepath.Join(base, "elsewhere")}}, repo: repo}.shields(c))
}
