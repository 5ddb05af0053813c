package worktree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// userCheckout is the main checkout as a user leaves it mid-work: a tracked edit, a staged new
// file and an untracked draft. It returns the checkout's head and status, which nothing done
// in a run worktree may change.
func userCheckout(f *fixture) (head, status string) {
	f.t.Helper()
	f.repo.WriteFile("tracked.txt", "committed\n")
	f.repo.Commit("tracked")
	// Run worktrees live in the main checkout, under .norma/ (ignored there, as init does).
	writeFile(f.t, f.repo.Dir, ".git/info/exclude", ".norma/\n")
	writeFile(f.t, f.repo.Dir, "tracked.txt", "committed\nEDIT\n")
	writeFile(f.t, f.repo.Dir, "draft.txt", "draft\n")
	writeFile(f.t, f.repo.Dir, "staged.txt", "staged\n")
	f.git("add", "staged.txt")
	return f.rev("HEAD"), f.git("status", "--porcelain", "--untracked-files=all")
}

// createInside makes the run's workspace where git-norma makes it: inside the main checkout,
// so git looking for a repository above the workspace finds the user's.
func (f *fixture) createInside(taskID, runID string) *Workspace {
	f.t.Helper()
	ws, err := f.m.Create(f.ctx, CreateOptions{TaskID: taskID, RunID: runID, Target: "main",
		Path: filepath.Join(f.repo.Dir, ".norma", "runs", runID, "workspace")})
	require.NoError(f.t, err)
	return ws
}

// TestBrokenGitFileNeverReachesTheMainCheckout: an agent that deletes its worktree's .git file,
// or points it at the main repository, must not make git-norma's commit, rescue or removal
// work on the main checkout: the work goes on the task branch, the user's checkout and main
// stay exactly as they were.
func TestBrokenGitFileNeverReachesTheMainCheckout(t *testing.T) {
	breakages := map[string]func(t *testing.T, f *fixture, ws *Workspace){
		"deleted": func(t *testing.T, f *fixture, ws *Workspace) {
			require.NoError(t, os.Remove(filepath.Join(ws.Dir(), ".git")))
		},
		"pointing at the main repository": func(t *testing.T, f *fixture, ws *Workspace) {
			writeFile(t, ws.Dir(), ".git", "gitdir: "+filepath.Join(f.repo.Dir, ".git")+"\n")
		},
		"a symlink to a file of the user's": func(t *testing.T, f *fixture, ws *Workspace) {
			require.NoError(t, os.Remove(filepath.Join(ws.Dir(), ".git")))
			require.NoError(t, os.Symlink(filepath.Join(f.repo.Dir, "draft.txt"), filepath.Join(ws.Dir(), ".git")))
		},
	}
	for name, breakIt := range breakages {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			head, status := userCheckout(f)
			ws := f.createInside("T-1", "R-1")
			since := f.state(ws)
			breakIt(t, f, ws)
			writeFile(t, ws.Dir(), "a.txt", "x\n")

			res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
			require.NoError(t, err)
			assert.Equal(t, f.rev("refs/heads/norma/task/T-1"), res.Commit)
			assert.Equal(t, []string{"README.md", "a.txt", "tracked.txt"}, f.treeFiles(res.Commit))

			writeFile(t, ws.Dir(), "b.txt", "left uncommitted\n")
			_, err = f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
			require.NoError(t, err)
			assert.NoDirExists(t, ws.Dir())
			assert.Equal(t, []string{"README.md", "a.txt", "b.txt", "tracked.txt"}, f.treeFiles("refs/heads/norma/task/T-1"))

			assert.Equal(t, head, f.rev("HEAD"), "main moved")
			assert.Equal(t, status, f.git("status", "--porcelain", "--untracked-files=all"), "the user's checkout changed")
			assert.Equal(t, "draft\n", readFile(t, f.repo.Dir, "draft.txt"))
		})
	}
}

// TestRemoveLeavesAnUnknownDirectoryAlone: a workspace directory git no longer knows (its git
// directory pruned) gets no git command at all, not even a status: git would take the main
// checkout's repository for its own and commit the user's work there.
func TestRemoveLeavesAnUnknownDirectoryAlone(t *testing.T) {
	f := newFixture(t)
	head, status := userCheckout(f)
	ws := f.createInside("T-1", "R-1")
	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), ".git")))
	writeFile(t, ws.Dir(), "a.txt", "x\n")
	f.git("worktree", "unlock", ws.Dir()) // as a user could, before a prune of their own
	f.git("worktree", "prune")

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.ErrorIs(t, err, ErrNotWorktree)
	assert.FileExists(t, filepath.Join(ws.Dir(), "a.txt"), "the files are left where they are")
	assert.Equal(t, head, f.rev("HEAD"), "main moved")
	assert.Equal(t, status, f.git("status", "--porcelain", "--untracked-files=all"), "the user's checkout changed")
}

// TestHolderCountsAWorktreeWithoutItsGitFile: a worktree whose .git file is gone still has its
// files and index; it keeps holding its branch until it is removed (git worktree prune, which
// Create runs, would drop its index and leave the files unrescued).
func TestHolderCountsAWorktreeWithoutItsGitFile(t *testing.T) {
	f := newFixture(t)
	ws := f.createInside("T-1", "R-1")
	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), ".git")))

	holder, err := f.m.Holder(f.ctx, "norma/task/T-1")
	require.NoError(t, err)
	assert.Equal(t, ws.Dir(), holder)
}

// TestAnotherRunsPruneKeepsAWorktreeWithoutItsGitFile: a live run's worktree whose .git file
// an agent deleted is still known to git after another run's Create (which prunes) and the
// user's own git worktree prune, so its run can save what is in it.
func TestAnotherRunsPruneKeepsAWorktreeWithoutItsGitFile(t *testing.T) {
	f := newFixture(t)
	ws := f.createInside("T-1", "R-1")
	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), ".git")))
	writeFile(t, ws.Dir(), "a.txt", "the agent's work\n")
	f.createInside("T-2", "R-2")
	f.git("worktree", "prune")

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)
	assert.Equal(t, "the agent's work", f.show("refs/heads/norma/task/T-1", "a.txt"))
	assert.NoDirExists(t, ws.Dir())
}

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

// TestForgetNeverPrunesYourWorktrees: git-norma forgets its own vanished worktrees by their
// git directories, never with git worktree prune, which judges every worktree by its gitdir
// file: a run worktree's agent, rewriting its own to name your linked worktree faster than
// anything sets it back, had git delete your worktree's git directory as a duplicate.
func TestForgetNeverPrunesYourWorktrees(t *testing.T) {
	f := newFixture(t)
	yours := filepath.Join(t.TempDir(), "zfeature")
	f.git("worktree", "add", "-q", "-b", "feature", yours)
	writeFile(t, yours, "s.txt", "staged\n")
	f.gitIn(yours, "add", "s.txt")
	ws := f.createInside("T-1", "R-1")
	// The agent's doing, as git worktree prune would find it mid-race.
	require.NoError(t, os.Remove(filepath.Join(ws.GitDir(), "locked")))
	require.NoError(t, os.WriteFile(filepath.Join(ws.GitDir(), "gitdir"), []byte(filepath.Join(yours, ".git")+"\n"), 0o644))

	require.NoError(t, f.m.ForgetVanished(f.ctx))

	assert.Equal(t, "A  s.txt", f.gitIn(yours, "status", "--porcelain"))
}

// TestForgetVanishedLeavesYourLockedWorktree: a locked worktree of yours whose directory is
// gone (a drive not mounted now) is not git-norma's to forget, even when an agent's git
// directory claims its path with git-norma's lock reason.
func TestForgetVanishedLeavesYourLockedWorktree(t *testing.T) {
	f := newFixture(t)
	yours := filepath.Join(t.TempDir(), "usb")
	f.git("worktree", "add", "-q", "-b", "feature", yours)
	f.git("worktree", "lock", "--reason", "on my usb drive", yours)
	require.NoError(t, os.RemoveAll(yours))
	ws := f.createInside("T-1", "R-1")
	require.NoError(t, os.WriteFile(filepath.Join(ws.GitDir(), "gitdir"), []byte(filepath.Join(yours, ".git")+"\n"), 0o644))

	require.NoError(t, f.m.ForgetVanished(f.ctx))

	assert.DirExists(t, filepath.Join(f.git("rev-parse", "--path-format=absolute", "--git-common-dir"), "worktrees", "usb"))
}

// TestForgetVanishedLeavesALiveRun: an agent's git directory that lists its worktree as gone at
// a path leading to another run's live worktree (<it>/nope/..) does not have git-norma forget
// that run's git directory.
func TestForgetVanishedLeavesALiveRun(t *testing.T) {
	f := newFixture(t)
	f.m.RunsDir = filepath.Join(f.repo.Dir, ".norma", "runs")
	live := f.createInside("T-1", "R-1")
	evil := f.createInside("T-2", "R-2")
	require.NoError(t, os.WriteFile(filepath.Join(evil.GitDir(), "gitdir"), []byte(live.Dir()+"/nope/../.git\n"), 0o644))

	require.NoError(t, f.m.ForgetVanished(f.ctx))

	assert.DirExists(t, live.GitDir())
	assert.Equal(t, "refs/heads/norma/task/T-1", f.gitIn(live.Dir(), "symbolic-ref", "HEAD"))
}

// TestRemoveDropsTheRecord: a removed run worktree's record goes with it: a later run's git
// directory may get its git directory's name, even its inode, and the ended run's record must
// not then speak for it.
func TestRemoveDropsTheRecord(t *testing.T) {
	f := newFixture(t)
	f.m.RunsDir = filepath.Join(f.repo.Dir, ".norma", "runs")
	ws := f.createInside("T-1", "R-1")
	record := filepath.Join(f.m.RunsDir, "R-1", ownGitDirName, recordFile)
	require.FileExists(t, record)

	_, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)

	assert.NoFileExists(t, record)
	assert.Empty(t, runsDir(f.m.RunsDir).records())
}

// Remove gives modes back only in the run's own worktree (RunsDir/<run>/workspace), never
// through a path from git's list that leads elsewhere: by .. or by a link in a workspace, to
// your checkout or your home, whose read-only directories stay read-only.
func TestRemoveGivesBackModesOnlyInItsRunWorktree(t *testing.T) {
	f := newFixture(t)
	runs := filepath.Join(t.TempDir(), "runs")
	f.m.RunsDir = runs
	victim := t.TempDir()
	ro := filepath.Join(victim, "sub", "ro")
	require.NoError(t, os.MkdirAll(ro, 0o755))
	require.NoError(t, os.Chmod(ro, 0o500))
	t.Cleanup(func() { _ = os.Chmod(ro, 0o700) })
	ws := filepath.Join(runs, "R-1", "workspace")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	require.NoError(t, os.Symlink(victim, filepath.Join(ws, "link")))
	rel, err := filepath.Rel(runs, victim)
	require.NoError(t, err)

	for _, path := range []string{filepath.Join(ws, "link", "sub"), runs + "/" + rel + "/sub"} {
		require.NoError(t, os.Chmod(ro, 0o500))
		_, err := f.m.Remove(f.ctx, path, "R-1", "T-1")
		require.Error(t, err, path)
		st, err := os.Stat(ro)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o500), st.Mode().Perm(), "a directory %s leads to keeps its mode", path)
	}
}
