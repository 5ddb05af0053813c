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
