package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withRemote gives the fixture a bare remote "origin" holding main, and a second clone of it
// ("other", another worker) that can move it.
func (f *fixture) withRemote() (other string) {
	f.t.Helper()
	bare := filepath.Join(f.t.TempDir(), "remote.git")
	f.git("init", "-q", "--bare", bare)
	f.git("remote", "add", "origin", bare)
	f.git("push", "-q", "origin", "main")
	other = filepath.Join(f.t.TempDir(), "other")
	f.git("clone", "-q", "-b", "main", bare, other)
	f.gitIn(other, "config", "user.name", "Other Worker")
	f.gitIn(other, "config", "user.email", "other@example.com")
	return other
}

// pushFrom commits a file in the other clone and pushes it to origin's ref.
func (f *fixture) pushFrom(other, ref, file, content string) string {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(filepath.Join(other, file), []byte(content), 0o644))
	f.gitIn(other, "add", file)
	f.gitIn(other, "commit", "-q", "-m", "other: "+file)
	f.gitIn(other, "push", "-q", "-f", "origin", "HEAD:"+ref)
	return f.gitIn(other, "rev-parse", "HEAD")
}

// pushedFirstStep gives the fixture a remote, with a second clone of it (other), and pushes
// there the first step of task norma-b's branch: the opening of the remote task-branch tests.
func (f *fixture) pushedFirstStep() (other, branch string) {
	f.t.Helper()
	other = f.withRemote()
	branch = TaskBranch("norma-b")
	first := f.commitOn(branch, "main", map[string]string{"b.txt": "1\n"}, "step 1")
	require.NoError(f.t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", first))
	return other, branch
}

// takeOver is another worker taking a task branch over from other's clone: it fetches the
// branch, commits file on it and pushes; it returns that commit.
func (f *fixture) takeOver(other, branch, file, content string) string {
	f.t.Helper()
	f.gitIn(other, "fetch", "-q", "origin", branch)
	f.gitIn(other, "checkout", "-q", "-B", "taken", "FETCH_HEAD")
	return f.pushFrom(other, "refs/heads/"+branch, file, content)
}

func TestSyncTargetFastForwardsTheCheckout(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	theirs := f.pushFrom(other, "refs/heads/main", "theirs.txt", "theirs\n")
	// the user's own edit of a file the remote did not touch, and an untracked file
	require.NoError(t, os.WriteFile(filepath.Join(f.repo.Dir, "mine.txt"), []byte("mine\n"), 0o644))

	tip, err := f.m.Remote("origin").SyncTarget(f.ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, theirs, tip)
	assert.Equal(t, theirs, f.rev("main"))
	assert.FileExists(t, filepath.Join(f.repo.Dir, "theirs.txt"), "the checkout followed")
	mine, err := os.ReadFile(filepath.Join(f.repo.Dir, "mine.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(mine))
}

func TestSyncTargetNeverOverwritesLocalEdits(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	f.pushFrom(other, "refs/heads/main", "shared.txt", "theirs\n")
	before := f.rev("main")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo.Dir, "shared.txt"), []byte("my edit\n"), 0o644))

	_, err := f.m.Remote("origin").SyncTarget(f.ctx, "main")
	var le *LandError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, before, f.rev("main"), "the local target did not move")
	mine, err := os.ReadFile(filepath.Join(f.repo.Dir, "shared.txt"))
	require.NoError(t, err)
	assert.Equal(t, "my edit\n", string(mine), "the user's edit is intact")
}

func TestSyncTargetRefusesLocalCommitsTheRemoteLacks(t *testing.T) {
	f := newFixture(t)
	f.withRemote()
	f.repo.Commit("mine, not pushed")
	mine := f.rev("main")

	_, err := f.m.Remote("origin").SyncTarget(f.ctx, "main")
	require.ErrorIs(t, err, ErrTargetAhead)
	assert.Equal(t, mine, f.rev("main"))
}

func TestFetchTaskBranch(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	branch := TaskBranch("norma-a")

	kept, err := f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-1")
	require.NoError(t, err, "a branch the remote does not have is fine")
	assert.Empty(t, kept)
	exists, err := f.m.BranchExists(f.ctx, branch)
	require.NoError(t, err)
	assert.False(t, exists)

	// another worker's steps: the local branch is made from them
	theirs := f.pushFrom(other, "refs/heads/"+branch, "a.txt", "step 1\n")
	kept, err = f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-2")
	require.NoError(t, err)
	assert.Empty(t, kept)
	assert.Equal(t, theirs, f.rev(branch))

	// local steps not pushed yet stay
	ours := f.commitOn(branch, branch, map[string]string{"a.txt": "step 2\n"}, "ours")
	_, err = f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-3")
	require.NoError(t, err)
	assert.Equal(t, ours, f.rev(branch))

	// the two went their own ways: the remote's is taken, this clone's kept
	f.gitIn(other, "reset", "-q", "--hard", "HEAD~1")
	theirs = f.pushFrom(other, "refs/heads/"+branch, "b.txt", "another worker\n")
	kept, err = f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-4")
	require.NoError(t, err)
	assert.Equal(t, KeptPrefix+"norma-a/r-4", kept)
	assert.Equal(t, ours, f.rev(kept), "nothing of this clone's is lost")
	assert.Equal(t, theirs, f.rev(branch))
}

func TestPushTaskBranchLease(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()
	second := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", second), "on top of what this clone pushed")

	// another worker took the task over and pushed its own work
	theirs := f.takeOver(other, branch, "c.txt", "theirs\n")
	third := f.commitOn(branch, branch, map[string]string{"b.txt": "3\n"}, "step 3")
	err := f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", third)
	require.ErrorIs(t, err, ErrBranchTaken)
	remote := f.git("ls-remote", "origin", "refs/heads/"+branch)
	assert.Contains(t, remote, theirs, "the other worker's work is not overwritten")
	assert.False(t, errors.Is(err, ErrTargetMoved))

	var le *LandError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, theirs, le.Theirs, "the refusal names the copy it found")

	// the claim holder takes the branch back: its next push goes over the other worker's,
	// which is kept
	kept, err := f.m.Remote("origin").TakeBackTaskBranch(f.ctx, "norma-b", "r-1", le.Theirs)
	require.NoError(t, err)
	assert.Equal(t, theirs, f.rev(kept))
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", third))
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), third)
}

// A take-back goes over exactly the copy that was judged: one pushed after the judgement (the
// claim may have moved on meanwhile) is refused again, not overwritten.
func TestTakeBackOnlyWhatWasJudged(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()
	zombie := f.takeOver(other, branch, "z.txt", "zombie\n")
	c2 := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	err := f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", c2)
	var le *LandError
	require.ErrorAs(t, err, &le)
	require.Equal(t, zombie, le.Theirs)
	later := f.pushFrom(other, "refs/heads/"+branch, "x.txt", "later\n")
	_, err = f.m.Remote("origin").TakeBackTaskBranch(f.ctx, "norma-b", "r-1", le.Theirs)
	require.ErrorIs(t, err, ErrBranchTaken)
	require.ErrorIs(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", c2), ErrBranchTaken)
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), later, "the later push stays")
}

// A task branch deleted on the remote is not anyone's work to keep: taking it back makes the
// next push create it again.
func TestTakeBackOfADeletedBranch(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()
	f.gitIn(other, "push", "-q", "origin", ":refs/heads/"+branch)
	c2 := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	err := f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", c2)
	var le *LandError
	require.ErrorAs(t, err, &le)
	require.ErrorIs(t, err, ErrBranchTaken)
	assert.Empty(t, le.Theirs)
	kept, err := f.m.Remote("origin").TakeBackTaskBranch(f.ctx, "norma-b", "r-1", le.Theirs)
	require.NoError(t, err)
	assert.Empty(t, kept)
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", c2))
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), c2)
}

// A push that reached the remote while its answer did not (a timeout, a dropped connection)
// leaves the tracking ref behind: pushing the same commit again finds the remote has it.
func TestPushTaskBranchThatGotThere(t *testing.T) {
	f := newFixture(t)
	f.withRemote()
	branch := TaskBranch("norma-b")
	// pushed by URL, not by the remote's name: git leaves the tracking ref alone, as when a
	// push's answer was lost
	bare := f.git("remote", "get-url", "origin")
	first := f.commitOn(branch, "main", map[string]string{"b.txt": "1\n"}, "step 1")
	f.git("push", "-q", bare, first+":refs/heads/"+branch)
	require.Empty(t, f.m.refAt(f.ctx, TrackingRef("origin", branch)))
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", first), "the remote has this very commit")
	assert.Equal(t, first, f.git("rev-parse", TrackingRef("origin", branch)))
	second := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", second), "and the next push has its lease")

	// someone rewinds the branch to step 1 (a person dropping a step): the next push does not
	// undo that on its own — only the claim's holder may, by taking it back
	f.git("push", "-q", "-f", bare, first+":refs/heads/"+branch)
	third := f.commitOn(branch, branch, map[string]string{"b.txt": "3\n"}, "step 3")
	require.ErrorIs(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", third), ErrBranchTaken)
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), first)
}

func TestSyncTargetLeavesARebaseAlone(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	f.pushFrom(other, "refs/heads/main", "theirs.txt", "theirs\n")
	before := f.rev("main")
	// git's own marker of a rebase of main under way
	dir := filepath.Join(f.repo.Dir, ".git", "rebase-merge")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "head-name"), []byte("refs/heads/main\n"), 0o644))

	_, err := f.m.Remote("origin").SyncTarget(f.ctx, "main")
	require.ErrorIs(t, err, ErrTargetBusy)
	assert.Equal(t, before, f.rev("main"))
}

// A remote that stops answering does not hold a worker for ever: each call gives up after
// RemoteTimeout, saying so.
func TestRemoteThatStopsAnswering(t *testing.T) {
	f := newFixture(t)
	f.withRemote()
	// the remote end of a push that never answers
	f.git("config", "remote.origin.receivepack", "sleep 30; :")
	f.m.RemoteTimeout = time.Second
	branch := TaskBranch("norma-c")
	first := f.commitOn(branch, "main", map[string]string{"c.txt": "1\n"}, "step 1")

	start := time.Now()
	err := f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-c", first)
	require.ErrorIs(t, err, ErrRemoteSilent)
	assert.Less(t, time.Since(start), 10*time.Second, "given up after the timeout, not after the remote")
}

// Two landings that meet at the remote: git's lease check passed for both, and the remote
// refuses the second with "cannot lock ref ... is at X but expected Y" rather than a refused
// lease. That is the target having moved, and the landing is built again — not an error that
// gives the task up. (An update hook moves main the moment this push arrives.)
func TestPushLandingMeetsAnotherAtTheRemote(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	bare := f.git("remote", "get-url", "origin")
	theirs := f.pushFrom(other, "refs/heads/theirs", "c.txt", "theirs\n")
	hook := filepath.Join(bare, "hooks", "update")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\n[ \"$1\" = refs/heads/main ] && git update-ref refs/heads/main "+theirs+"\nexit 0\n"), 0o755))

	branch := TaskBranch("norma-b")
	head := f.commitOn(branch, "main", map[string]string{"b.txt": "b\n"}, "step 1")
	parent := f.rev("main")
	commit := f.commitOn("squash", "main", map[string]string{"b.txt": "b\n"}, "feat: b")
	err := f.m.Remote("origin").pushLanding(f.ctx, LandOptions{Remote: "origin", Target: "main", TaskBranch: branch}, commit, parent, head)
	require.ErrorIs(t, err, ErrTargetMoved)
	assert.Equal(t, theirs, f.gitIn(bare, "rev-parse", "main"), "the other landing stays")
}

// A git fetch of the person's (or an editor's auto-fetch) moves refs/remotes/origin/*, not the
// lease: another worker's push it brought in is still not overwritten.
func TestPushTaskBranchLeaseSurvivesAFetch(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()

	theirs := f.takeOver(other, branch, "c.txt", "theirs\n")
	f.git("fetch", "-q", "origin")
	require.Equal(t, theirs, f.rev(TrackingRef("origin", branch)))

	second := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	require.ErrorIs(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", second), ErrBranchTaken)
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), theirs, "the other worker's work is not overwritten")
}

// A clone an older git-norma pushed from has a tracking ref and no lease ref: its next push
// goes on from what it pushed, but never over another's work a fetch brought in.
func TestPushTaskBranchLeaseOfAnUpgradedClone(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()
	f.git("update-ref", "-d", LeaseRef("origin", branch))
	second := f.commitOn(branch, branch, map[string]string{"b.txt": "2\n"}, "step 2")
	require.NoError(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", second), "on top of what it pushed")
	assert.Equal(t, second, f.rev(LeaseRef("origin", branch)))

	f.git("update-ref", "-d", LeaseRef("origin", branch))
	theirs := f.takeOver(other, branch, "c.txt", "theirs\n")
	f.git("fetch", "-q", "origin")
	third := f.commitOn(branch, branch, map[string]string{"b.txt": "3\n"}, "step 3")
	require.ErrorIs(t, f.m.Remote("origin").PushTaskBranch(f.ctx, "norma-b", third), ErrBranchTaken)
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), theirs)
}

// A run whose clone went its own way from the remote's copy of the task branch (kept under
// the run's name, FetchTaskBranch) and whose remote copy then conflicts with the target keeps
// that copy as well, and starts over from the target: the two kept branches do not collide.
func TestFetchedBranchThatConflictsIsKeptBesideTheClonesOwn(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	branch := TaskBranch("norma-a")
	f.pushFrom(other, "refs/heads/"+branch, "a.txt", "step 1\n")
	_, err := f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-1")
	require.NoError(t, err)
	ours := f.commitOn(branch, branch, map[string]string{"a.txt": "step 2\n"}, "ours")
	theirs := f.pushFrom(other, "refs/heads/"+branch, "shared.txt", "another worker\n")
	f.repo.WriteFile("shared.txt", "landed meanwhile\n")
	moved := f.repo.Commit("another task lands")

	kept, err := f.m.Remote("origin").FetchTaskBranch(f.ctx, "norma-a", "r-2")
	require.NoError(t, err)
	assert.Equal(t, KeptPrefix+"norma-a/r-2", kept)
	ws := f.createCatchingUp("norma-a", "r-2")

	assert.Equal(t, ours, f.rev(kept), "this clone's work is still kept")
	require.NotEmpty(t, ws.CaughtUp.Kept)
	assert.NotEqual(t, kept, ws.CaughtUp.Kept)
	assert.Equal(t, theirs, f.rev(ws.CaughtUp.Kept), "the remote's copy, which conflicts, is kept too")
	assert.Equal(t, moved, f.gitIn(ws.Dir(), "rev-parse", "HEAD"), "the run starts over from the target")
}

// A fetch that read the remote before another worker moved it and the remote-tracking ref on
// (here: the tracking ref is ahead of what the remote serves) must not set the ref back unless
// forced: a run's start fetches without the landing lock.
func TestFetchTargetUnforcedNeverSetsTheTrackingRefBack(t *testing.T) {
	f := newFixture(t)
	other := f.withRemote()
	before := f.rev("main")
	ahead := f.pushFrom(other, "refs/heads/main", "a.txt", "landed\n")
	remote := f.m.Remote("origin")
	require.NoError(t, remote.FetchTarget(f.ctx, "main", false))
	require.Equal(t, ahead, f.rev(TrackingRef("origin", "main")))
	f.gitIn(other, "push", "-q", "-f", "origin", before+":refs/heads/main") // what a stale read saw

	require.Error(t, remote.FetchTarget(f.ctx, "main", false))
	assert.Equal(t, ahead, f.rev(TrackingRef("origin", "main")), "not set back")
	require.NoError(t, remote.FetchTarget(f.ctx, "main", true))
	assert.Equal(t, before, f.rev(TrackingRef("origin", "main")), "forced: the remote's, whatever it is")
}

func TestDeleteTaskBranchOnlyTheCopyThisClonePushed(t *testing.T) {
	f := newFixture(t)
	other, branch := f.pushedFirstStep()
	first := f.rev(branch)

	// another worker pushed to it since: theirs stays
	theirs := f.takeOver(other, branch, "c.txt", "theirs\n")
	require.ErrorIs(t, f.m.Remote("origin").DeleteTaskBranch(f.ctx, "norma-b", first), ErrBranchTaken)
	assert.Contains(t, f.git("ls-remote", "origin", "refs/heads/"+branch), theirs)

	// the copy this clone pushed goes, with the lease and tracking refs of it
	f.gitIn(other, "push", "-q", "-f", "origin", first+":refs/heads/"+branch)
	require.NoError(t, f.m.Remote("origin").DeleteTaskBranch(f.ctx, "norma-b", first))
	assert.Empty(t, f.git("ls-remote", "origin", "refs/heads/"+branch))
	assert.Empty(t, f.git("for-each-ref", LeaseRef("origin", branch), TrackingRef("origin", branch)))
	// gone already: nothing to do
	require.NoError(t, f.m.Remote("origin").DeleteTaskBranch(f.ctx, "norma-b", first))
}
