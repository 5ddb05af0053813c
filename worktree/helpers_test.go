package worktree

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// fixture is a real repository (main worktree on main) with a Manager on it.
type fixture struct {
	t    *testing.T
	repo *gittest.Repo
	m    *Manager
	ctx  context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	r := gittest.NewRepo(t)
	return &fixture{t: t, repo: r, m: NewManager(r.Dir), ctx: context.Background()}
}

// gitIn runs git in dir and fails the test on error.
func (f *fixture) gitIn(dir string, args ...string) string {
	f.t.Helper()
	out, err := git.Runner{Dir: dir}.Output(f.ctx, args...)
	require.NoError(f.t, err, "git %v in %s", args, dir)
	return out
}

// git runs git in the main worktree.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	return f.gitIn(f.repo.Dir, args...)
}

func (f *fixture) rev(ref string) string {
	f.t.Helper()
	return f.git("rev-parse", "--verify", ref)
}

// create makes the workspace of task/run under a fresh temporary directory.
func (f *fixture) create(taskID, runID string) *Workspace {
	f.t.Helper()
	ws, err := f.m.Create(f.ctx, CreateOptions{TaskID: taskID, RunID: runID, Target: "main",
		Path: filepath.Join(f.t.TempDir(), ".norma", "runs", runID, "workspace")})
	require.NoError(f.t, err)
	return ws
}

// commitOn commits files (content "" deletes the file) on branch, creating the branch from
// from when it does not exist, through a throwaway linked worktree; returns the new tip.
func (f *fixture) commitOn(branch, from string, files map[string]string, msg string) string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "scratch")
	if f.git("branch", "--list", branch) == "" {
		f.git("worktree", "add", "-q", "-b", branch, dir, from)
	} else {
		f.git("worktree", "add", "-q", dir, branch)
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if content == "" {
			require.NoError(f.t, os.Remove(p))
			continue
		}
		require.NoError(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(f.t, os.WriteFile(p, []byte(content), 0o644))
	}
	f.gitIn(dir, "add", "-A")
	f.gitIn(dir, "commit", "-q", "--allow-empty", "-m", msg)
	tip := f.gitIn(dir, "rev-parse", "HEAD")
	f.git("worktree", "remove", "--force", dir)
	return tip
}

// installHook writes an executable hook into the repository's common hooks directory, which
// every worktree uses.
func (f *fixture) installHook(name, script string) {
	f.t.Helper()
	dir := filepath.Join(f.repo.Dir, ".git", "hooks")
	require.NoError(f.t, os.MkdirAll(dir, 0o755))
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
}

// refBytes returns the bytes of the loose ref file and of packed-refs (either may be absent).
func (f *fixture) refBytes(branch string) string {
	f.t.Helper()
	loose, _ := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "refs", "heads", branch))
	packed, _ := os.ReadFile(filepath.Join(f.repo.Dir, ".git", "packed-refs"))
	return string(loose) + "\x00" + string(packed)
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	require.NoError(t, err)
	return string(b)
}

// treeFiles lists the paths in a commit's tree, sorted.
func (f *fixture) treeFiles(commit string) []string {
	f.t.Helper()
	out := f.git("ls-tree", "-r", "--name-only", "-z", commit)
	files := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	sort.Strings(files)
	return files
}

// show returns a file's content at a commit.
func (f *fixture) show(commit, path string) string {
	f.t.Helper()
	out, err := git.Runner{Dir: f.repo.Dir}.Output(f.ctx, "cat-file", "blob", commit+":"+path)
	require.NoError(f.t, err)
	return out
}

// trailers returns what `git interpret-trailers --parse` finds in a commit's message.
func (f *fixture) trailers(commit string) string {
	f.t.Helper()
	msg := f.git("cat-file", "commit", commit)
	_, body, ok := strings.Cut(msg, "\n\n")
	require.True(f.t, ok)
	out, err := git.Runner{Dir: f.repo.Dir}.Input(f.ctx, strings.NewReader(body), "interpret-trailers", "--parse")
	require.NoError(f.t, err)
	return out
}

// realPath resolves symlinks so paths compare with what git reports.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

// NewManager returns a manager for the repository whose main worktree is root.
func NewManager(root string) *Manager {
	m := &Manager{Git: git.Runner{Dir: root, Env: []string{"GIT_NORMA_INTERNAL=1"}}}
	if l, ok := git.Discover(root); ok {
		m.CommonDir = l.CommonDir
	}
	return m
}
