package worktree

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// A rebase of the target detaches HEAD, so the target looks free; landing on it would break
// the rebase. The landing is refused, and the rebase finishes as the user meant it.
func TestLandRefusesATargetBeingRebased(t *testing.T) {
	f := landFixture(t)
	f.repo.WriteFile("b.txt", "b\n")
	f.repo.Commit("second")
	f.commitOn(taskBranch, "main", map[string]string{"task.txt": "task\n"}, "task")
	old := f.rev("main")
	editFirst := git.Runner{Dir: f.repo.Dir, Env: []string{"GIT_SEQUENCE_EDITOR=sed -i 1s/^pick/edit/"}}
	require.NoError(t, editFirst.Run(f.ctx, "rebase", "-q", "-i", "HEAD~1"))

	_, err := f.land("")
	require.ErrorIs(t, err, ErrTargetBusy)
	assert.Contains(t, err.Error(), "a rebase in "+f.repo.Dir)
	assert.Equal(t, old, f.rev("main"), "main is as the rebase expects it")

	f.git("commit", "-q", "--amend", "-m", "second, reworded")
	f.git("rebase", "--continue")
	assert.Equal(t, "second, reworded", f.git("log", "-1", "--format=%s", "main"))
}

func TestLandRefusesATargetBeingBisected(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"task.txt": "task\n"}, "task")
	old := f.rev("main")
	f.git("bisect", "start", "main", "main~1")

	_, err := f.land("")
	require.ErrorIs(t, err, ErrTargetBusy)
	assert.Contains(t, err.Error(), "a bisect in "+f.repo.Dir)
	assert.Equal(t, old, f.rev("main"))
}

// An unfinished merge in the target's checkout is said to be one, not taken for local edits.
func TestLandRefusesACheckoutInTheMiddleOfAMerge(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"task.txt": "task\n"}, "task")
	f.commitOn("other", "main", map[string]string{"a.txt": "other\n"}, "other")
	f.repo.WriteFile("a.txt", "mine\n")
	f.repo.Commit("mine")
	old := f.rev("main")
	_, err := git.Runner{Dir: f.repo.Dir}.Output(f.ctx, "merge", "-q", "other")
	require.Error(t, err, "the merge conflicts")
	before := f.snapshot(f.repo.Dir, "a.txt")

	_, err = f.land("")
	require.ErrorIs(t, err, ErrCheckoutBusy)
	assert.NotContains(t, err.Error(), "\n", "one line")
	assert.Equal(t, old, f.rev("main"))
	assert.Equal(t, before, f.snapshot(f.repo.Dir, "a.txt"), "the merge is as the user left it")
	_, err = os.Stat(f.repo.Dir + "/.git/MERGE_HEAD")
	assert.NoError(t, err)
}
