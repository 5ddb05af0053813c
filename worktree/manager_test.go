package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func TestTaskBranch(t *testing.T) {
	assert.Equal(t, "norma/task/bd-12", TaskBranch("bd-12"))
}

func TestCreateOptionsValidate(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "ws")
	tests := []struct {
		name string
		o    CreateOptions
		ok   bool
	}{
		{"complete", CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "main", Path: abs}, true},
		{"missing task", CreateOptions{RunID: "R-1", Target: "main", Path: abs}, false},
		{"missing run", CreateOptions{TaskID: "T-1", Target: "main", Path: abs}, false},
		{"missing target", CreateOptions{TaskID: "T-1", RunID: "R-1", Path: abs}, false},
		{"missing path", CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "main"}, false},
		{"relative path", CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "main", Path: "runs/R-1/workspace"}, false},
		{"dot-relative path", CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "main", Path: "./ws"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrInvalidOptions)
			}
		})
	}
}

func TestCreateRejectsInvalidOptionsWithoutTouchingTheRepo(t *testing.T) {
	f := newFixture(t)
	_, err := f.m.Create(f.ctx, CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "main", Path: "rel/ws"})
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.Empty(t, f.git("branch", "--list", "norma/*"))
	list, err := f.m.List(f.ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1)
}

func TestCreateNewBranchFromTarget(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile("src/a.go", "package a\n")
	tip := f.repo.Commit("second")

	ws := f.create("T-1", "R-1")

	assert.Equal(t, "norma/task/T-1", ws.Branch())
	assert.Equal(t, tip, f.rev("refs/heads/norma/task/T-1"), "branch starts at the target tip")
	assert.Equal(t, tip, ws.Base())
	assert.True(t, filepath.IsAbs(ws.Dir()))
	assert.Equal(t, "refs/heads/norma/task/T-1", f.gitIn(ws.Dir(), "symbolic-ref", "HEAD"))
	assert.Equal(t, "package a\n", readFile(t, ws.Dir(), "src/a.go"))
	assert.Empty(t, f.gitIn(ws.Dir(), "status", "--porcelain"))
	assert.Equal(t, tip, f.rev("refs/heads/main"), "target untouched")

	exists, err := f.m.BranchExists(f.ctx, ws.Branch())
	require.NoError(t, err)
	assert.True(t, exists)
	exists, err = f.m.BranchExists(f.ctx, "norma/task/nope")
	require.NoError(t, err)
	assert.False(t, exists)
}

func TestCreateReusesExistingBranchAndBaseIsForkPoint(t *testing.T) {
	f := newFixture(t)
	fork := f.rev("main")
	// An earlier run's work on the task branch.
	prev := f.commitOn("norma/task/T-1", "main", map[string]string{"work.txt": "run 1\n"}, "run 1 step")
	// The target moves on after the fork.
	f.repo.WriteFile("other.txt", "target moved\n")
	moved := f.repo.Commit("target moves")

	ws := f.create("T-1", "R-2")

	assert.Equal(t, prev, f.gitIn(ws.Dir(), "rev-parse", "HEAD"), "the run continues on the branch")
	assert.Equal(t, prev, f.rev("refs/heads/norma/task/T-1"), "the branch is not reset to the target")
	assert.Equal(t, "run 1\n", readFile(t, ws.Dir(), "work.txt"))
	assert.NoFileExists(t, filepath.Join(ws.Dir(), "other.txt"))
	assert.Equal(t, fork, ws.Base(), "base is the fork point, not the moved target tip")
	assert.NotEqual(t, moved, ws.Base())
}

func TestCreateFailsWhileAnotherWorktreeHoldsTheBranch(t *testing.T) {
	f := newFixture(t)
	first := f.create("T-1", "R-1")

	second := filepath.Join(t.TempDir(), ".norma", "runs", "R-2", "workspace")
	ws, err := f.m.Create(f.ctx, CreateOptions{TaskID: "T-1", RunID: "R-2", Target: "main", Path: second})
	require.Error(t, err)
	assert.Nil(t, ws)
	assert.Contains(t, err.Error(), "R-2")

	holder, err := f.m.Holder(f.ctx, "norma/task/T-1")
	require.NoError(t, err)
	assert.Equal(t, realPath(t, first.Dir()), realPath(t, holder))

	holder, err = f.m.Holder(f.ctx, "norma/task/free")
	require.NoError(t, err)
	assert.Empty(t, holder)

	main, err := f.m.Holder(f.ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, realPath(t, f.repo.Dir), realPath(t, main))
}

func TestCreateFailsForMissingTarget(t *testing.T) {
	f := newFixture(t)
	_, err := f.m.Create(f.ctx, CreateOptions{TaskID: "T-1", RunID: "R-1", Target: "no-such-branch",
		Path: filepath.Join(t.TempDir(), "ws")})
	require.Error(t, err)
	exists, err := f.m.BranchExists(f.ctx, "norma/task/T-1")
	require.NoError(t, err)
	assert.False(t, exists)
}

func TestList(t *testing.T) {
	f := newFixture(t)
	head := f.rev("HEAD")
	spaced := filepath.Join(t.TempDir(), "dir with spaces", "run 1", "work space")
	require.NoError(t, os.MkdirAll(filepath.Dir(spaced), 0o755))
	f.git("worktree", "add", "-q", "-b", "feature/x", spaced, "main")
	detached := filepath.Join(t.TempDir(), "detached")
	f.git("worktree", "add", "-q", "--detach", detached, "main")
	ws := f.create("T-9", "R-9")

	list, err := f.m.List(f.ctx)
	require.NoError(t, err)
	require.Len(t, list, 4)

	assert.Equal(t, realPath(t, f.repo.Dir), list[0].Path, "main worktree first")
	assert.Equal(t, "main", list[0].Branch)
	assert.Equal(t, head, list[0].Head)

	byPath := map[string]Info{}
	for _, wt := range list[1:] {
		assert.False(t, wt.Bare)
		assert.False(t, wt.Prunable)
		byPath[wt.Path] = wt
	}
	assert.Equal(t, Info{Path: realPath(t, spaced), Head: head, Branch: "feature/x"}, byPath[realPath(t, spaced)])
	assert.Equal(t, Info{Path: realPath(t, detached), Head: head}, byPath[realPath(t, detached)])
	assert.Equal(t, Info{Path: realPath(t, ws.Dir()), Head: head, Branch: "norma/task/T-9", Locked: "git-norma run R-9"}, byPath[realPath(t, ws.Dir())], "a run worktree is locked")

	// A worktree whose directory vanished is reported prunable.
	require.NoError(t, os.RemoveAll(detached))
	list, err = f.m.List(f.ctx)
	require.NoError(t, err)
	gone := filepath.Join(realPath(t, filepath.Dir(detached)), "detached")
	require.Len(t, list, 4)
	for _, wt := range list {
		assert.Equal(t, wt.Path == gone, wt.Prunable, wt.Path)
	}
}

func TestRemoveKeepsUncommittedChangesOnTheBranch(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile("old.txt", "old\n")
	f.repo.Commit("add old")
	ws := f.create("T-1", "R-1")
	tip := f.rev("refs/heads/norma/task/T-1")

	writeFile(t, ws.Dir(), "README.md", "# changed by an interrupted agent\n")
	writeFile(t, ws.Dir(), "new/dir/file.txt", "untracked\n")
	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), "old.txt")))
	// A failing pre-commit hook must not block the rescue commit.
	f.installHook("pre-commit", "exit 1")

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)

	assert.NoDirExists(t, ws.Dir())
	holder, err := f.m.Holder(f.ctx, "norma/task/T-1")
	require.NoError(t, err)
	assert.Empty(t, holder)
	list, err := f.m.List(f.ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1)

	newTip := f.rev("refs/heads/norma/task/T-1")
	assert.Equal(t, tip, f.rev(newTip+"^"), "one rescue commit on top of the branch")
	subject := f.git("log", "-1", "--format=%s", newTip)
	assert.Equal(t, "chore(norma): keep uncommitted changes of run R-1", subject)
	assert.Equal(t, "Norma-Task: T-1\nNorma-Run: R-1\nNorma-Role: rescue", f.trailers(newTip), "the hooks take it for the task's work wherever it travels")
	assert.Equal(t, "# changed by an interrupted agent", f.show(newTip, "README.md"))
	assert.Equal(t, "untracked", f.show(newTip, "new/dir/file.txt"))
	assert.Equal(t, []string{"README.md", "new/dir/file.txt"}, f.treeFiles(newTip))
	assert.Equal(t, "main", f.git("rev-parse", "--abbrev-ref", "HEAD"), "main worktree untouched")
}

func TestRemoveCleanWorktreeMakesNoCommit(t *testing.T) {
	f := newFixture(t)
	ws := f.create("T-1", "R-1")
	tip := f.rev("refs/heads/norma/task/T-1")

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)

	assert.NoDirExists(t, ws.Dir())
	assert.Equal(t, tip, f.rev("refs/heads/norma/task/T-1"))
}

func TestRemoveMissingDirectoryPrunes(t *testing.T) {
	f := newFixture(t)
	ws := f.create("T-1", "R-1")
	require.NoError(t, os.RemoveAll(ws.Dir()))

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)

	holder, err := f.m.Holder(f.ctx, "norma/task/T-1")
	require.NoError(t, err)
	assert.Empty(t, holder, "the stale registration is pruned")
	// The branch can be checked out again.
	again := f.create("T-1", "R-2")
	assert.True(t, strings.HasSuffix(again.Dir(), filepath.Join("R-2", "workspace")))
}

// A worktree whose directory was deleted does not hold its branch: Holder ignores it and
// Create prunes it before adding the run's worktree.
func TestCreateAfterWorktreeDirDeleted(t *testing.T) {
	repo := gittest.NewRepo(t)
	m := NewManager(repo.Dir)
	ctx := context.Background()
	opts := CreateOptions{TaskID: "norma-a1", RunID: "r-1", Path: filepath.Join(t.TempDir(), "ws"), Target: "main"}
	_, err := m.Create(ctx, opts)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(opts.Path))

	holder, err := m.Holder(ctx, TaskBranch("norma-a1"))
	require.NoError(t, err)
	assert.Empty(t, holder)
	opts.RunID, opts.Path = "r-2", filepath.Join(t.TempDir(), "ws2")
	ws, err := m.Create(ctx, opts)
	require.NoError(t, err)
	assert.Equal(t, opts.Path, ws.Dir())
}
