package git_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// gitLayout is what git itself says about dir, or ok=false where git finds no work tree.
func gitLayout(t *testing.T, dir string) (git.Layout, bool) {
	t.Helper()
	out, err := git.Runner{Dir: dir}.Output(context.Background(), "rev-parse", "--path-format=absolute",
		"--git-common-dir", "--git-dir", "--show-toplevel")
	if err != nil {
		return git.Layout{}, false
	}
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 3, out)
	return git.Layout{CommonDir: lines[0], GitDir: lines[1], TopLevel: lines[2]}, true
}

// TestDiscoverAgreesWithGit checks the file-system discovery against git rev-parse on real
// layouts: where it answers, the answer is git's; the everyday layouts must be answered
// (else the fast path silently never runs); the rest must be left to git.
func TestDiscoverAgreesWithGit(t *testing.T) {
	r := gittest.NewRepo(t)
	base := t.TempDir()
	r.WriteFile("sub/deeper/file.txt", "x\n")
	r.Commit("sub")

	linked := filepath.Join(base, "linked")
	r.Must("worktree", "add", "-q", "-b", "linked", linked)
	require.NoError(t, os.MkdirAll(filepath.Join(linked, "sub", "new"), 0o755))

	separate := filepath.Join(base, "separate")
	r.Must("init", "-q", "--separate-git-dir", filepath.Join(base, "separate.git"), separate)

	relative := filepath.Join(base, "relative", "work")
	r.Must("init", "-q", relative)
	require.NoError(t, os.Rename(filepath.Join(relative, ".git"), filepath.Join(base, "relative", "store")))
	require.NoError(t, os.WriteFile(filepath.Join(relative, ".git"), []byte("gitdir: ../store\n"), 0o644))

	nested := filepath.Join(r.Dir, "sub", "nested")
	r.Must("init", "-q", nested)

	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(filepath.Join(r.Dir, "sub"), link))

	bare := filepath.Join(base, "bare.git")
	r.Must("init", "-q", "--bare", bare)

	withWorktreeConfig := filepath.Join(base, "coreworktree")
	r.Must("init", "-q", withWorktreeConfig)
	r.Must("-C", withWorktreeConfig, "config", "core.worktree", r.Dir)

	withInclude := filepath.Join(base, "include")
	r.Must("init", "-q", withInclude)
	r.Must("-C", withInclude, "config", "include.path", "/nonexistent")

	// A HEAD emptied by a crash: git walks on to the repository above, so must we (or decline).
	brokenHead := filepath.Join(r.Dir, "sub", "broken")
	r.Must("init", "-q", brokenHead)
	require.NoError(t, os.WriteFile(filepath.Join(brokenHead, ".git", "HEAD"), nil, 0o644))

	bareOnHeaderLine := filepath.Join(base, "bareline")
	r.Must("init", "-q", bareOnHeaderLine)
	appendFile(t, filepath.Join(bareOnHeaderLine, ".git", "config"), "[core] bare = true\n")

	withExtension := filepath.Join(base, "extension")
	r.Must("init", "-q", withExtension)
	r.Must("-C", withExtension, "config", "extensions.somethingnew", "true")

	noRepo := filepath.Join(base, "norepo")
	require.NoError(t, os.MkdirAll(noRepo, 0o755))

	answered := []string{
		r.Dir, filepath.Join(r.Dir, "sub", "deeper"), linked, filepath.Join(linked, "sub", "new"),
		separate, relative, nested, link,
	}
	declined := []string{
		bare, filepath.Join(r.Dir, ".git"), filepath.Join(r.Dir, ".git", "refs"),
		filepath.Join(r.Dir, ".git", "worktrees", "linked"), withWorktreeConfig, withInclude,
		brokenHead, bareOnHeaderLine, withExtension,
	}
	for _, dir := range answered {
		got, ok := git.Discover(dir)
		require.True(t, ok, "Discover(%s) left an everyday layout to git", dir)
		want, gitOK := gitLayout(t, dir)
		require.True(t, gitOK, dir)
		require.Equal(t, want, got, dir)
	}
	for _, dir := range declined {
		got, ok := git.Discover(dir)
		require.False(t, ok, "Discover(%s) answered %+v where git must decide", dir, got)
	}
	// Outside any repository discovery declines, and so does git (unless the temp dir itself
	// sits in a repository, which only git can rule on).
	if _, gitOK := gitLayout(t, noRepo); !gitOK {
		_, ok := git.Discover(noRepo)
		require.False(t, ok)
	}

	t.Run("a .git file owned by someone else", func(t *testing.T) {
		gitFile := filepath.Join(linked, ".git")
		if err := os.Lchown(gitFile, 54321, 54321); err != nil {
			t.Skip("cannot give the file away here (not root):", err)
		}
		defer os.Lchown(gitFile, os.Geteuid(), os.Getegid())
		_, ok := git.Discover(linked)
		require.False(t, ok, "git checks the owner of the .git file too")
	})

	t.Run("environment that changes discovery", func(t *testing.T) {
		t.Setenv("GIT_CEILING_DIRECTORIES", base)
		_, ok := git.Discover(r.Dir)
		require.False(t, ok)
	})
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
