package gitnorma

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/hooks"
)

// realPath resolves symlinks (a temporary directory may sit behind one) so paths compare
// equal to what git reports.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func mkdirs(t *testing.T, elem ...string) string {
	t.Helper()
	p := filepath.Join(elem...)
	require.NoError(t, os.MkdirAll(p, 0o755))
	return p
}

// gitIn runs git in dir (no repository needed) and fails the test on error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git.Runner{Dir: dir}.Output(context.Background(), args...)
	require.NoError(t, err, "git %v in %s", args, dir)
	return out
}

func TestOpenRepo(t *testing.T) {
	ctx := context.Background()
	main := gittest.NewRepo(t)
	root := realPath(t, main.Dir)
	deep := mkdirs(t, main.Dir, "a", "b", "c", "d", "e")

	// A linked worktree outside the main worktree, and one where run worktrees live.
	wt := filepath.Join(t.TempDir(), "wt")
	main.Must("worktree", "add", "-q", "-b", "feature", wt)
	wtSub := mkdirs(t, wt, "pkg", "sub")
	runWT := filepath.Join(main.Dir, ".norma", "runs", "r1", "workspace")
	main.Must("worktree", "add", "-q", "-b", "norma/task/norma-a1", runWT)

	tests := []struct {
		name       string
		dir        string
		wantRoot   string
		wantGitDir string
	}{
		{"root", main.Dir, root, filepath.Join(root, ".git")},
		{"deep subdirectory", deep, root, filepath.Join(root, ".git")},
		{"linked worktree", wt, root, filepath.Join(root, ".git")},
		{"subdirectory of a linked worktree", wtSub, root, filepath.Join(root, ".git")},
		{"run worktree under .norma", runWT, root, filepath.Join(root, ".git")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenRepo(ctx, tt.dir)
			require.NoError(t, err)
			assert.Equal(t, tt.wantRoot, r.Root)
			assert.Equal(t, tt.wantGitDir, r.GitDir)
			assert.Equal(t, filepath.Join(tt.wantRoot, ".norma"), r.NormaDir())
			assert.Equal(t, filepath.Join(tt.wantRoot, ".norma", "locks", "run.lock"), r.Path("locks", "run.lock"))

			// The runner works in the main worktree and marks its processes with the guard.
			assert.Equal(t, tt.wantRoot, r.Git.Dir)
			assert.Contains(t, r.Git.Env, hooks.GuardEnv)
			top, err := r.Git.Output(ctx, "rev-parse", "--show-toplevel")
			require.NoError(t, err)
			assert.Equal(t, tt.wantRoot, top)
			env, err := r.Git.Output(ctx, "-c", "alias.showenv=!env", "showenv")
			require.NoError(t, err)
			assert.Contains(t, strings.Split(env, "\n"), hooks.GuardEnv, "git's child processes (hooks, aliases) see the guard")

			list, err := r.Worktrees(ctx).List(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, list)
			assert.Equal(t, tt.wantRoot, list[0].Path)
		})
	}
}

// The guard reaches the hooks git runs for commits made through Repo.Git, and only those.
func TestOpenRepoGuardReachesHooks(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	seen := filepath.Join(t.TempDir(), "seen")
	repo.WriteFile(".git/hooks/post-commit", "#!/bin/sh\necho \"${"+hooks.GuardVar+":-unset}\" >> '"+seen+"'\n")
	require.NoError(t, os.Chmod(filepath.Join(repo.Dir, ".git", "hooks", "post-commit"), 0o755))

	r, err := OpenRepo(ctx, repo.Dir)
	require.NoError(t, err)
	require.NoError(t, r.Git.Run(ctx, "commit", "-q", "--allow-empty", "-m", "internal"))
	repo.Must("commit", "-q", "--allow-empty", "-m", "human")

	data, err := os.ReadFile(seen)
	require.NoError(t, err)
	assert.Equal(t, "1\nunset\n", string(data))
}

// git init --separate-git-dir: the git dir is not <root>/.git, and `git worktree list` names the
// git dir, not the work tree, as the main worktree. From a linked worktree nothing in the
// repository points back at the main work tree, so an error is acceptable there; a wrong Root
// (state written into the git dir) is not.
func TestOpenRepoSeparateGitDir(t *testing.T) {
	ctx := context.Background()
	gittest.Isolate(t)
	base := t.TempDir()
	newSep := func(name, gitDirName string) (work, gitDir string) {
		work, gitDir = filepath.Join(base, name), filepath.Join(mkdirs(t, base, name+"-store"), gitDirName)
		gitIn(t, base, "init", "-q", "-b", "main", "--separate-git-dir", gitDir, work)
		r := gittest.Open(t, work)
		r.Must("config", "user.name", "Test User")
		r.Must("config", "user.email", "test@example.com")
		r.WriteFile("f.txt", "x\n")
		r.Commit("initial")
		return realPath(t, work), realPath(t, gitDir)
	}
	work, gitDir := newSep("work", "repo.git")
	sub := mkdirs(t, work, "sub", "dir")
	linked := filepath.Join(base, "linked")
	gittest.Open(t, work).Must("worktree", "add", "-q", "-b", "other", linked)
	dotWork, dotGitDir := newSep("dotwork", ".git")

	tests := []struct {
		name          string
		dir           string
		work, gitDir  string
		errorAccepted bool
	}{
		{"work tree root", work, work, gitDir, false},
		{"subdirectory", sub, work, gitDir, false},
		{"git dir named .git elsewhere", dotWork, dotWork, dotGitDir, false},
		{"linked worktree", linked, work, gitDir, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenRepo(ctx, tt.dir)
			if err != nil && tt.errorAccepted {
				var e *Error
				require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
				assert.Equal(t, ExitFatal, ExitCode(e))
				assert.NotEmpty(t, e.Hint)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.work, r.Root)
			assert.Equal(t, tt.gitDir, r.GitDir)
			assert.Equal(t, tt.work, r.Git.Dir)
		})
	}
}

func TestOpenRepoErrors(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	// Keep git from finding a repository above the temporary directories.
	plainBase := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(plainBase))

	bare := filepath.Join(t.TempDir(), "bare.git")
	gitIn(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	plain := mkdirs(t, plainBase, "plain", "sub")

	tests := []struct {
		name     string
		dir      string
		wantMsg  []string
		wantHint string
	}{
		{"bare repository", bare, []string{bare, "bare repository"}, "git clone"},
		{"inside a bare repository", filepath.Join(bare, "refs"), []string{"bare repository"}, "git clone"},
		{"plain directory", plain, []string{"not a git repository", plain}, "git init"},
		{"inside the .git directory", filepath.Join(repo.Dir, ".git"), []string{"inside the git directory"}, "work tree"},
		{"inside .git/refs", filepath.Join(repo.Dir, ".git", "refs"), []string{"inside the git directory"}, "work tree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := OpenRepo(ctx, tt.dir)
			require.Error(t, err)
			assert.Nil(t, r)
			var e *Error
			require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
			assert.Equal(t, ExitFatal, ExitCode(e))
			for _, w := range tt.wantMsg {
				assert.Contains(t, err.Error(), w)
			}
			assert.Contains(t, e.Hint, tt.wantHint)
		})
	}
}

func TestOpenRepoMissingDirectory(t *testing.T) {
	gittest.Isolate(t)
	dir := filepath.Join(t.TempDir(), "does-not-exist")
	_, err := OpenRepo(context.Background(), dir)
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
	assert.Equal(t, ExitFatal, ExitCode(e))
	assert.NotContains(t, e.Hint, "install git")
	assert.Contains(t, err.Error(), dir)
}

func TestOpenRepoGitNotFound(t *testing.T) {
	repo := gittest.NewRepo(t)
	t.Setenv("PATH", t.TempDir())
	_, err := OpenRepo(context.Background(), repo.Dir)
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
	assert.Equal(t, ExitFatal, ExitCode(e))
	assert.NotEmpty(t, strings.TrimSpace(err.Error()))
	assert.Contains(t, e.Hint, "install git")
	assert.Contains(t, err.Error(), "git was not found")
}
