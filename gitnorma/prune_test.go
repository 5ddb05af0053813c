package gitnorma

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
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

// prune keeps a run whose guard violation the user has not cleared: the violation lives with
// the run's row, and deleting it would let run and loop start again unseen.
func TestPruneKeepsARunWithAPendingViolation(t *testing.T) {
	ctx, a, st := twoFailedRuns(t)
	violated := "r-20260101-000000-000-000001"
	require.NoError(t, st.RecordViolation(ctx, store.Violation{RunID: violated, TaskID: "norma-t1", Paths: []string{".git/config"}, At: a.Now()}))

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-20260101-000000-000-000002"}, rep.Runs)
	assert.Equal(t, []string{"run " + violated + ": its guard violation is pending (look at it: git norma status " + violated + "; then: git norma resume)"}, rep.Kept)
	require.Error(t, refuseViolated(ctx, st), "run and loop still refuse")

	_, err = a.Repo.ClearViolations(ctx, a.Now())
	require.NoError(t, err)
	rep, err = a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{violated}, rep.Runs, "cleared: retention applies again")
}

// prune keeps an ended run still marked as awaiting the guard (a landing killed while its
// unconfined checks ran): the mark lives with the run's row, and deleting it would lose the
// violation the next run records for what those checks wrote.
func TestPruneKeepsARunAwaitingTheGuard(t *testing.T) {
	ctx, a, st := twoFailedRuns(t)
	marked := "r-20260101-000000-000-000001"
	require.NoError(t, st.SetGuardPending(ctx, marked, true))

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-20260101-000000-000-000002"}, rep.Runs)
	require.Len(t, rep.Kept, 1)
	assert.Contains(t, rep.Kept[0], "run "+marked+": ")

	a.Repo.recordEndedUnguarded(ctx, st, a.Now)
	require.Error(t, refuseViolated(ctx, st), "the next run records it, and refuses")
}

// prune keeps a run whose fork point git cannot judge just now (the commit missing: an object
// moved aside, alternates on a disk not mounted): the row is what refuses a landing that would
// bring that commit back once it is there again.
func TestPruneKeepsAForkPointGitCannotJudge(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	repo.Must("branch", "norma/task/norma-t1")
	st := openStore(t, a)
	const id = "r-20260101-000000-000-000001"
	missing := strings.Repeat("e", 40)
	failedRun(t, st, id, store.ForkPoint{Base: missing, Target: "main"})

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Runs)
	require.NotEmpty(t, rep.Kept)
	assert.Contains(t, rep.Kept[0], "run "+id+": git cannot tell whether norma/task/norma-t1 holds eeeeeeeeee")

	repo.Must("branch", "-D", "norma/task/norma-t1")
	rep, err = a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{id}, rep.Runs, "without the branch nothing can land")
}

// prune deletes the lease refs of task branches gone from this clone and of remotes it no
// longer has, and keeps the others, and any of a task a run holds.
func TestPruneDropsStaleLeases(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	head := repo.Must("rev-parse", "HEAD")
	repo.Must("remote", "add", "origin", t.TempDir())
	repo.Must("branch", "norma/task/norma-t1", head)
	kept := []string{"refs/norma/leases/origin/norma/task/norma-t1", "refs/norma/leases/origin/norma/task/norma-t3"}
	gone := []string{"refs/norma/leases/origin/norma/task/norma-t2", "refs/norma/leases/renamed/norma/task/norma-t1"}
	for _, ref := range append(kept, gone...) {
		repo.Must("update-ref", ref, head)
	}
	lock, err := a.Repo.acquireTaskLock("norma-t3") // a run of norma-t3 is under way
	require.NoError(t, err)
	defer lock.Release()

	a.pruner().pruneLeases(ctx)
	out := repo.Must("for-each-ref", "--format=%(refname)", "refs/norma/leases/")
	assert.Equal(t, kept, strings.Fields(out))
}

// prune keeps the newest run built on a commit its task branch holds while the target still
// has that commit too: should the user take it off the target later (a secret committed by
// mistake, reset away), that row is what refuses the landing that would bring it back.
func TestPruneKeepsTheNewestForkPointOnTheTarget(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	clean := repo.Must("rev-parse", "HEAD")
	repo.WriteFile("secret.txt", "a token committed by mistake\n")
	secret := repo.Commit("oops")
	repo.Must("switch", "-q", "-c", "norma/task/norma-t1")
	repo.WriteFile("work.txt", "the task's work\n")
	head := repo.Commit("work")
	repo.Must("switch", "-q", "main")
	st := openStore(t, a)
	older, newer := "r-20260101-000000-000-000001", "r-20260101-000000-000-000002"
	for _, id := range []string{older, newer} {
		failedRun(t, st, id, store.ForkPoint{Base: secret, Started: id == older, Target: "main"})
	}

	require.NoError(t, os.MkdirAll(a.Repo.Path("runs", newer, "steps"), 0o700))

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{older}, rep.Runs, "one row per fork point is enough")
	assert.Contains(t, strings.Join(rep.Kept, "\n"), "run "+newer+": norma/task/norma-t1 is built on "+secret[:10])
	assert.NoDirExists(t, a.Repo.Path("runs", newer), "only its record is needed")
	_, err = st.Run(ctx, newer)
	require.NoError(t, err)

	repo.Must("reset", "-q", "--hard", clean) // the user takes the secret off main
	err = a.lander().checkForkPoints(ctx, st, landRequest{runID: newer, task: tracker.Task{ID: "norma-t1"}, target: "main"}, head)
	var refusal *landRefusal
	require.ErrorAs(t, err, &refusal, "the landing would bring the secret back")
}

// A killed run kept only for its fork point leaves its worktree behind, checked out on the
// task branch. prune --force removes that worktree (the record stays for the landing) and
// deletes the branch in the same prune, and with the branch the run goes: no second prune,
// and no "checked out in" a worktree prune itself removed.
func TestPruneForceDeletesTheBranchOfAForkPointRunsWorktree(t *testing.T) {
	ctx := context.Background()
	a, repo, st, id := forkPointRun(t)
	ws := a.Repo.Path("runs", id, "workspace")
	repo.Must("worktree", "add", "-q", ws, "norma/task/norma-t1")

	rep, err := a.pruner().prune(ctx, st, PruneOptions{Force: true})
	require.NoError(t, err)
	assert.NoDirExists(t, ws)
	assert.Equal(t, []string{"norma/task/norma-t1"}, rep.Branches, "kept: %v", rep.Kept)
	assert.Equal(t, []string{id}, rep.Runs, "kept: %v", rep.Kept)
}

// The retention after every run looks at the branches only when runs went: a run kept for
// its fork point, its record only, is no run going at every pass after the one that removed
// its files (each would list the whole backlog, through bd a process, after every run).
func TestAutoPruneSkipsTheBranchesForARecordAlreadyKept(t *testing.T) {
	ctx := context.Background()
	a, _, st, id := forkPointRun(t)
	require.NoError(t, os.MkdirAll(a.Repo.Path("runs", id, "steps"), 0o700))
	p := a.pruner()
	listed := 0
	p.tracker = func() (tracker.Tracker, error) { listed++; return a.Tracker() }
	o := PruneOptions{KeepLast: 0, KeepDays: 0, auto: true}

	_, err := p.prune(ctx, st, o)
	require.NoError(t, err)
	assert.NoDirExists(t, a.Repo.Path("runs", id))
	assert.Equal(t, 1, listed, "its files went: its branch may have lost its last retained run")

	rep, err := p.prune(ctx, st, o)
	require.NoError(t, err)
	assert.Equal(t, 1, listed, "nothing went since")
	assert.Empty(t, rep.Runs)
	_, err = st.Run(ctx, id)
	require.NoError(t, err, "the record stays")
}

// failedRun records a failed run of task norma-t1, built on fork (none when its Base is empty).
func failedRun(t *testing.T, st *store.Store, id string, fork store.ForkPoint) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: id, Goal: "g", RunDir: ".norma/runs/" + id, TaskID: "norma-t1", Status: store.StatusFailed}, nil))
	if fork.Base != "" {
		require.NoError(t, st.SetForkPoint(ctx, id, fork))
	}
}

// openStore opens a's run store for the test.
func openStore(t *testing.T, a *App) *store.Store {
	t.Helper()
	st, err := a.Repo.OpenStore(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// prune decides on and removes a run of a task under that task's lock: a run of the task that
// starts meanwhile (it frees the branch from this worktree, resumes from its work) must not
// have it removed underneath it. While a live process holds the lock, the run is kept.
func TestPruneLeavesARunToTheLiveRunOfItsTask(t *testing.T) {
	ctx := context.Background()
	a, _, st, id, ws := deadRunWithWork(t)
	lock, err := a.Repo.acquireTaskLock("norma-t1") // a new run of the task has just begun
	require.NoError(t, err)
	require.NoError(t, lock.Record("r-20260101-000000-000-000002", a.Now()))

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Empty(t, rep.Runs)
	assert.Contains(t, rep.Kept, "run "+id+": a run of its task is in progress")
	assert.FileExists(t, filepath.Join(ws, "wip.txt"), "the live run's to deal with")

	lock.Release()
	rep, err = a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{id}, rep.Runs, "kept: %v", rep.Kept)
	assert.NoDirExists(t, ws)
}

// What the fallback guard replaced when it restored a file, kept in the run dir, may be the
// user's own edit made during the step: retention keeps the run until the user has dropped it
// (or --force), saying where it is.
func TestPruneKeepsWhatTheGuardReplaced(t *testing.T) {
	ctx := context.Background()
	a, _ := initApp(t)
	st := openStore(t, a)
	id, bare := "r-20260101-000000-000-000001", "r-20260101-000000-000-000002"
	failedRun(t, st, id, store.ForkPoint{})
	failedRun(t, st, bare, store.ForkPoint{})
	kept := a.Repo.Path("runs", id, "guard.replaced-123")
	require.NoError(t, os.MkdirAll(kept, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(kept, ".git%2Finfo%2Fexclude"), []byte("your line\n"), 0o600))

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{bare}, rep.Runs)
	require.Len(t, rep.Kept, 1)
	assert.Contains(t, rep.Kept[0], "run "+id+": ")
	assert.Contains(t, rep.Kept[0], ".norma/runs/"+id+"/guard.replaced-123")
	assert.FileExists(t, filepath.Join(kept, ".git%2Finfo%2Fexclude"))

	rep, err = a.pruner().prune(ctx, st, PruneOptions{Force: true})
	require.NoError(t, err)
	assert.Equal(t, []string{id}, rep.Runs)
	assert.NoDirExists(t, a.Repo.Path("runs", id))
}

// prune saves a run worktree's uncommitted work onto its task branch only under the landing
// lock, as every move of a task branch by git-norma: an unconfined step's fallback guard holds
// it, and would take the branch moved meanwhile by no live run for its agent's doing. prune
// does not wait for a step: the run is kept for the next prune.
func TestPruneSavesAWorktreeUnderTheLandingLock(t *testing.T) {
	ctx := context.Background()
	a, repo, st, id, ws := deadRunWithWork(t)
	head := repo.Must("rev-parse", "norma/task/norma-t1")
	unlock, err := flock.Wait(ctx, a.Repo.Path("locks", "land.lock")) // an unconfined step's guard
	require.NoError(t, err)

	rep, err := a.pruner().prune(ctx, st, PruneOptions{})
	unlock()
	require.NoError(t, err)
	assert.Empty(t, rep.Runs)
	assert.Contains(t, strings.Join(rep.Kept, "\n"), "run "+id+": its worktree's work is saved onto its branch under the landing lock")
	assert.Equal(t, head, repo.Must("rev-parse", "norma/task/norma-t1"))
	assert.FileExists(t, filepath.Join(ws, "wip.txt"))

	rep, err = a.pruner().prune(ctx, st, PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{id}, rep.Runs, "kept: %v", rep.Kept)
	assert.NotEqual(t, head, repo.Must("rev-parse", "norma/task/norma-t1"), "its work saved")
}

// twoFailedRuns is an initialised repository whose store holds two failed runs,
// r-20260101-000000-000-000001 and …002, of no fork point.
func twoFailedRuns(t *testing.T) (context.Context, *App, *store.Store) {
	t.Helper()
	a, _ := initApp(t)
	st := openStore(t, a)
	for _, id := range []string{"r-20260101-000000-000-000001", "r-20260101-000000-000-000002"} {
		failedRun(t, st, id, store.ForkPoint{})
	}
	return context.Background(), a, st
}

// forkPointRun is a repository whose task branch norma/task/norma-t1 a failed run id started
// at HEAD: a run prune keeps for its fork point.
func forkPointRun(t *testing.T) (*App, *gittest.Repo, *store.Store, string) {
	t.Helper()
	a, repo := initApp(t)
	base := repo.Must("rev-parse", "HEAD")
	repo.Must("branch", "norma/task/norma-t1", base)
	st := openStore(t, a)
	id := "r-20260101-000000-000-000001"
	failedRun(t, st, id, store.ForkPoint{Base: base, Started: true, Target: "main"})
	return a, repo, st, id
}

// deadRunWithWork is a failed run id of task norma-t1 whose worktree, ws, on the task branch,
// holds the run's uncommitted work (wip.txt).
func deadRunWithWork(t *testing.T) (*App, *gittest.Repo, *store.Store, string, string) {
	t.Helper()
	a, repo := initApp(t)
	repo.Must("branch", "norma/task/norma-t1")
	st := openStore(t, a)
	id := "r-20260101-000000-000-000001"
	failedRun(t, st, id, store.ForkPoint{})
	ws := a.Repo.Path("runs", id, "workspace")
	repo.Must("worktree", "add", "-q", ws, "norma/task/norma-t1")
	require.NoError(t, os.WriteFile(filepath.Join(ws, "wip.txt"), []byte("the dead run's uncommitted work\n"), 0o600))
	return a, repo, st, id, ws
}
