package worktree

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (f *fixture) createCatchingUp(taskID, runID string) *Workspace {
	f.t.Helper()
	ws, err := f.m.Create(f.ctx, CreateOptions{TaskID: taskID, RunID: runID, Target: "main", CatchUp: true,
		Path: filepath.Join(f.t.TempDir(), ".norma", "runs", runID, "workspace")})
	require.NoError(f.t, err)
	return ws
}

func TestCatchUpMergesTheMovedTarget(t *testing.T) {
	f := newFixture(t)
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"work.txt": "run 1\n"}, "run 1 step")
	f.repo.WriteFile("other.txt", "landed meanwhile\n")
	moved := f.repo.Commit("another task lands")

	ws := f.createCatchingUp("T-1", "R-2")

	head := f.gitIn(ws.Dir(), "rev-parse", "HEAD")
	assert.Equal(t, head, ws.CaughtUp.Merged)
	assert.Equal(t, prev+"\n"+moved, f.git("rev-parse", head+"^1", head+"^2"), "a merge of the old tip and the target")
	assert.Equal(t, "run 1\n", readFile(t, ws.Dir(), "work.txt"), "the earlier work is kept")
	assert.Equal(t, "landed meanwhile\n", readFile(t, ws.Dir(), "other.txt"))
	assert.Equal(t, moved, ws.Base(), "patches are measured from what landed")
	assert.Empty(t, f.git("for-each-ref", KeptPrefix))
}

func TestCatchUpRestartsAConflictingBranchAndKeepsIt(t *testing.T) {
	f := newFixture(t)
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"shared.txt": "mine\n"}, "run 1 step")
	f.repo.WriteFile("shared.txt", "theirs\n")
	moved := f.repo.Commit("another task lands")

	ws := f.createCatchingUp("T-1", "R-2")

	assert.Equal(t, CatchUp{Kept: KeptPrefix + "T-1/R-2", Conflicts: []string{"shared.txt"}}, ws.CaughtUp)
	assert.Equal(t, prev, f.rev(KeptPrefix+"T-1/R-2"), "the old branch is kept, not lost")
	assert.Equal(t, moved, f.gitIn(ws.Dir(), "rev-parse", "HEAD"), "the run starts over from the target")
	assert.Equal(t, "theirs\n", readFile(t, ws.Dir(), "shared.txt"))
}

func TestCatchUpLeavesAnUpToDateBranchAlone(t *testing.T) {
	f := newFixture(t)
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"work.txt": "run 1\n"}, "run 1 step")

	ws := f.createCatchingUp("T-1", "R-2")

	assert.Equal(t, CatchUp{}, ws.CaughtUp)
	assert.Equal(t, prev, f.gitIn(ws.Dir(), "rev-parse", "HEAD"))
}

func TestCaughtUpFromTakesOnlyCatchUpMerges(t *testing.T) {
	f := newFixture(t)
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"work.txt": "run 1\n"}, "run 1 step")
	f.repo.WriteFile("other.txt", "landed meanwhile\n")
	f.repo.Commit("another task lands")
	merge := func(target, branch string) string {
		c, err := f.m.MergeCommit(f.ctx, target, branch, "norma: merge main into norma/task/T-1\n")
		require.NoError(t, err)
		return c
	}
	caughtUp := func(head, from string) bool { return f.m.CaughtUpFrom(f.ctx, head, from, "main") }

	one := merge("main", prev)
	assert.True(t, caughtUp(one, prev))
	assert.True(t, caughtUp(prev, prev))
	f.repo.WriteFile("more.txt", "landed later\n")
	f.repo.Commit("another task lands again")
	assert.True(t, caughtUp(merge("main", one), prev), "one catch-up on another")

	assert.False(t, caughtUp(one, f.rev("main")), "not on top of from")
	work := f.commitOn("norma/task/T-1", "main", map[string]string{"more work.txt": "x\n"}, "someone's work")
	assert.False(t, caughtUp(work, prev), "a commit of work")
	// the merge's parents, with a tree that brings in more
	extra := f.commitOn("side", "main", map[string]string{"work.txt": "run 1\n", "evil.txt": "x\n"}, "more")
	forged := f.git("commit-tree", extra+"^{tree}", "-p", prev, "-p", "main", "-m", "norma: merge main into norma/task/T-1")
	assert.False(t, caughtUp(forged, prev), "a merge whose tree is not the catch-up's")
	// an exact merge, of a branch that is not the target
	assert.False(t, caughtUp(merge("side", prev), prev), "a merge of another branch")
}

// A chain longer than any run leaves (anyone who can push the task branch could make one of a
// hundred thousand, three git calls each) is not looked through: Do runs again.
func TestCaughtUpFromIsBounded(t *testing.T) {
	f := newFixture(t)
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"work.txt": "run 1\n"}, "run 1 step")
	head := prev
	for range maxCatchUps {
		c, err := f.m.MergeCommit(f.ctx, "main", head, "norma: merge main into norma/task/T-1\n")
		require.NoError(t, err)
		head = c
	}
	assert.True(t, f.m.CaughtUpFrom(f.ctx, head, prev, "main"), "as many as runs leave")
	c, err := f.m.MergeCommit(f.ctx, "main", head, "norma: merge main into norma/task/T-1\n")
	require.NoError(t, err)
	assert.False(t, f.m.CaughtUpFrom(f.ctx, c, prev, "main"), "one more")
}
