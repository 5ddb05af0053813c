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

// gitBranches is git's own answer for the branches under refs/heads/<prefix>.
func gitBranches(t *testing.T, r *gittest.Repo, prefix string) []git.Branch {
	t.Helper()
	out := r.Must("for-each-ref", "--format=%(refname:short) %(objectname) %(worktreepath)", "refs/heads/"+prefix)
	var branches []git.Branch
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		b := git.Branch{Name: f[0], Head: f[1]}
		if len(f) == 3 {
			b.Worktree = f[2]
		}
		branches = append(branches, b)
	}
	return branches
}

func requireSameBranches(t *testing.T, r *gittest.Repo, common, prefix string) []git.Branch {
	t.Helper()
	got, ok := git.ReadBranches(common, prefix)
	require.True(t, ok, "ReadBranches left a files-backend repository to git")
	require.Equal(t, gitBranches(t, r, prefix), got)
	return got
}

// TestReadBranchesAgreesWithGit reads task branches from the files and compares them with
// git for-each-ref through the states a repository goes through: loose refs, packed refs, a
// packed ref updated loose, branches checked out in the main and linked worktrees, a detached
// worktree, deleted branches and removed worktrees.
func TestReadBranchesAgreesWithGit(t *testing.T) {
	r := gittest.NewRepo(t)
	ctx := context.Background()
	common := r.Must("rev-parse", "--path-format=absolute", "--git-common-dir")
	prefix := "norma/task/"

	require.Empty(t, requireSameBranches(t, r, common, prefix))

	r.Must("branch", "other")
	r.Must("branch", prefix+"t-1")
	r.Must("branch", prefix+"t-2")
	r.Must("branch", prefix+"deep/t-3")
	r.Must("branch", "norma/taskish")
	base := t.TempDir()
	r.Must("worktree", "add", "-q", filepath.Join(base, "wt1"), prefix+"t-1")
	r.Must("worktree", "add", "-q", "--detach", filepath.Join(base, "detached"), prefix+"t-2")
	got := requireSameBranches(t, r, common, prefix)
	require.Len(t, got, 3)
	require.NotEmpty(t, got[1].Worktree, "t-1 is checked out in wt1")

	r.Must("pack-refs", "--all")
	requireSameBranches(t, r, common, prefix)

	wt1 := gittest.Open(t, filepath.Join(base, "wt1"))
	wt1.WriteFile("f.txt", "x\n")
	wt1.Commit("loose again after packing")
	got = requireSameBranches(t, r, common, prefix)
	require.Equal(t, wt1.Must("rev-parse", "HEAD"), got[1].Head, "the loose ref wins over its packed copy")

	r.Must("checkout", "-q", prefix+"t-2")
	requireSameBranches(t, r, common, prefix)
	r.Must("checkout", "-q", "main")

	r.Must("worktree", "remove", "--force", filepath.Join(base, "wt1"))
	r.Must("branch", "-D", prefix+"t-1")
	r.Must("branch", "-D", prefix+"deep/t-3")
	require.Len(t, requireSameBranches(t, r, common, prefix), 1)

	t.Run("a symbolic ref is left to git", func(t *testing.T) {
		r.Must("symbolic-ref", "refs/heads/"+prefix+"alias", "refs/heads/main")
		defer func() { _ = r.Git.Run(ctx, "symbolic-ref", "--delete", "refs/heads/"+prefix+"alias") }()
		_, ok := git.ReadBranches(common, prefix)
		require.False(t, ok)
	})
	t.Run("a reftable repository is left to git", func(t *testing.T) {
		require.NoError(t, os.Mkdir(filepath.Join(common, "reftable"), 0o755))
		defer os.Remove(filepath.Join(common, "reftable"))
		_, ok := git.ReadBranches(common, prefix)
		require.False(t, ok)
	})
}

// TestReadHeadAgreesWithGit reads HEAD from the files of main and linked worktrees — on a
// loose branch, a packed one, detached — and compares with git; what only git can resolve
// (an unborn branch, a symbolic ref) is left to it.
func TestReadHeadAgreesWithGit(t *testing.T) {
	r := gittest.NewRepo(t)
	linkedDir := filepath.Join(t.TempDir(), "linked")
	r.Must("worktree", "add", "-q", "-b", "norma/task/t-1", linkedDir)
	linked := gittest.Open(t, linkedDir)
	readHead := func(w *gittest.Repo) (string, string, bool) {
		return git.ReadHeadAt(w.Must("rev-parse", "--absolute-git-dir"))
	}
	same := func(w *gittest.Repo) {
		t.Helper()
		branch, oid, ok := readHead(w)
		require.True(t, ok, "ReadHead left %s to git", w.Dir)
		want, _ := w.Git.Output(context.Background(), "symbolic-ref", "-q", "HEAD")
		require.Equal(t, want, branch)
		require.Equal(t, w.Must("rev-parse", "HEAD"), oid)
	}
	same(r)
	same(linked)
	linked.WriteFile("f.txt", "x\n")
	linked.Commit("on the task branch")
	same(linked)
	r.Must("pack-refs", "--all")
	require.NoFileExists(t, filepath.Join(r.Dir, ".git", "refs", "heads", "norma", "task", "t-1"))
	same(linked)
	same(r)
	linked.Must("checkout", "-q", "--detach")
	same(linked)

	r.Must("checkout", "-q", "--orphan", "unborn")
	_, _, ok := readHead(r)
	require.False(t, ok, "an unborn branch is left to git")
	r.Must("checkout", "-q", "-f", "main")
	r.Must("symbolic-ref", "refs/heads/alias", "refs/heads/main")
	r.Must("symbolic-ref", "HEAD", "refs/heads/alias")
	_, _, ok = readHead(r)
	require.False(t, ok, "a branch that is a symbolic ref is left to git")
}
