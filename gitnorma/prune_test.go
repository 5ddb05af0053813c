package gitnorma

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// prune deletes a task branch only as it judged it: never while a run of its task holds the
// lock, never once anyone moved it, never while it is checked out.
func TestPruneDeletesABranchOnlyAsJudged(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	_, err := Init(ctx, repo.Dir, InitOptions{})
	require.NoError(t, err)
	a, err := Open(ctx, repo.Dir)
	require.NoError(t, err)
	judged := repo.Must("rev-parse", "HEAD")
	repo.Must("branch", "norma/task/t-1", judged)
	row := BranchRow{Branch: "norma/task/t-1", Task: "t-1", Head: judged}
	exists := func() bool {
		_, err := a.Repo.Git.Output(ctx, "rev-parse", "-q", "--verify", "refs/heads/norma/task/t-1")
		return err == nil
	}

	lock, err := a.acquireTaskLock("t-1")
	require.NoError(t, err)
	why, err := a.deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, "a run of its task is in progress", why)
	assert.True(t, exists())
	lock.Release()

	wt := filepath.Join(t.TempDir(), "wt")
	repo.Must("worktree", "add", "-q", wt, "norma/task/t-1")
	why, err = a.deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, "checked out in "+realPath(t, wt), why)
	assert.True(t, exists())
	repo.Must("worktree", "remove", "--force", wt)

	repo.WriteFile("later.txt", "a commit made after prune judged the branch\n")
	moved := repo.Commit("later")
	repo.Must("branch", "-f", "norma/task/t-1", moved)
	why, err = a.deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, "it moved while it was being pruned", why)
	assert.True(t, exists(), "the later commit is still on the branch")

	row.Head = moved
	why, err = a.deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Empty(t, why)
	assert.False(t, exists())
}
