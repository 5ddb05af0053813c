package gitnorma

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prune deletes a task branch only as it judged it: never while a run of its task holds the
// lock, never once anyone moved it, never while a worktree has it checked out or is bisecting
// it; a branch already gone, or with a name that is no task id, fails nothing.
func TestPruneDeletesABranchOnlyAsJudged(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	const branch = "norma/task/norma-t1"
	judged := repo.Must("rev-parse", "HEAD")
	repo.Must("branch", branch, judged)
	row := BranchRow{Branch: branch, Task: "norma-t1", Head: judged}
	exists := func(name string) bool {
		_, err := a.Repo.Git.Output(ctx, "rev-parse", "-q", "--verify", "refs/heads/"+name)
		return err == nil
	}

	lock, err := a.Repo.acquireTaskLock("norma-t1")
	require.NoError(t, err)
	why, err := a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, "a run of its task is in progress", why)
	assert.True(t, exists(branch))
	lock.Release()

	wt := filepath.Join(t.TempDir(), "wt")
	repo.Must("worktree", "add", "-q", wt, branch)
	why, err = a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Contains(t, why, "checked out at")
	assert.True(t, exists(branch))
	gitIn(t, wt, "bisect", "start")
	gitIn(t, wt, "checkout", "-q", "--detach")
	why, err = a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Contains(t, why, "checked out at", "a worktree bisecting it holds it too")
	assert.True(t, exists(branch))
	gitIn(t, wt, "bisect", "reset")
	repo.Must("worktree", "remove", "--force", wt)

	repo.WriteFile("later.txt", "a commit made after prune judged the branch\n")
	moved := repo.Commit("later")
	repo.Must("branch", "-f", branch, moved)
	why, err = a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Contains(t, why, "it moved to")
	assert.True(t, exists(branch), "the later commit is still on the branch")

	row.Head = moved
	why, err = a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Empty(t, why)
	assert.False(t, exists(branch))
	why, err = a.pruner().deleteBranchAsJudged(ctx, row)
	require.NoError(t, err)
	assert.Empty(t, why, "already gone: nothing to do, nothing failed")

	repo.Must("branch", "norma/task/wip/x", moved)
	why, err = a.pruner().deleteBranchAsJudged(ctx, BranchRow{Branch: "norma/task/wip/x", Task: "wip/x", Head: moved})
	require.NoError(t, err, "a name that is no task id has no lock to take")
	assert.Empty(t, why)
	assert.False(t, exists("norma/task/wip/x"))
}
