package worktree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// ErrTargetAhead: the local target branch holds commits its remote lacks (or the two
// diverged). Landing through the remote would take them along; git-norma never pushes the
// user's own commits, so it refuses.
var ErrTargetAhead = errors.New("the local target branch has commits its remote lacks")

// ErrTargetRewound is ErrTargetAhead where the remote had those commits: it was rewritten (a
// force-push took them out) after the local target followed it. Pushing them again would undo
// that; whether to is the user's call.
var ErrTargetRewound = fmt.Errorf("%w, which it had before a force-push", ErrTargetAhead)

// DefaultRemoteTimeout is how long one fetch, ls-remote or push may take.
const DefaultRemoteTimeout = 10 * time.Minute

// Remote is a git remote that workers on several machines share: the target is synced from
// it, task branches fetched and pushed with leases, landings pushed by compare-and-swap.
type Remote struct {
	m    *Manager
	Name string
}

// Remote is the remote called name.
func (m *Manager) Remote(name string) Remote { return Remote{m: m, Name: name} }

// run runs a git command that talks to the remote, bounded by RemoteTimeout.
func (r Remote) run(ctx context.Context, args ...string) error {
	return r.bounded(ctx, args[0], func(ctx context.Context) error { return r.m.Git.Run(ctx, args...) })
}

// bounded runs call, git's `what` to the remote, under RemoteTimeout, and says if it ran out.
func (r Remote) bounded(ctx context.Context, what string, call func(context.Context) error) error {
	limit := r.m.RemoteTimeout
	if limit <= 0 {
		limit = DefaultRemoteTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := call(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("git %s gave no answer within %s: %w", what, limit, ErrRemoteSilent)
	}
	return err
}

// remoteErr says what failed talking to a remote: git's own first line, or that it stopped
// answering (errors.Is ErrRemoteSilent).
func remoteErr(what string, err error) error {
	if errors.Is(err, ErrRemoteSilent) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %s", what, firstLine(errStderr(err)))
}

// ErrRemoteSilent: a remote stopped answering (RemoteTimeout).
var ErrRemoteSilent = errors.New("the remote stopped answering")

// TrackingRef is where a remote's branch is fetched to.
func TrackingRef(remote, branch string) string { return "refs/remotes/" + remote + "/" + branch }

// LeaseRef is where this clone keeps the copy of a task branch it last pushed to or fetched
// from a remote: the lease of its next push there. Not the remote-tracking ref, which any git
// fetch (a person's, an editor's auto-fetch) moves to whatever the remote has, another
// worker's push included: a lease on it would let this clone push over that work.
func LeaseRef(remote, branch string) string { return leasePrefix + remote + "/" + branch }

const leasePrefix = "refs/norma/leases/"

// Lease is one of this clone's lease refs: the copy of Branch it last pushed to or fetched
// from Remote, At.
type Lease struct{ Ref, Remote, Branch, At string }

// Leases lists this clone's lease refs.
func (m *Manager) Leases(ctx context.Context) ([]Lease, error) {
	out, err := m.Git.ForEachRef(ctx, "%(refname) %(objectname)", leasePrefix)
	if err != nil {
		return nil, err
	}
	var leases []Lease
	for _, line := range strings.Split(out, "\n") {
		ref, at, _ := strings.Cut(line, " ")
		remote, task, ok := strings.Cut(strings.TrimPrefix(ref, leasePrefix), "/"+BranchPrefix)
		if ok {
			leases = append(leases, Lease{Ref: ref, Remote: remote, Branch: BranchPrefix + task, At: at})
		}
	}
	return leases, nil
}

// pushedAt records that the remote's copy of a task branch is commit ("" for none): its lease,
// and its tracking ref.
func (r Remote) pushedAt(ctx context.Context, branch, commit string) error {
	for _, ref := range []string{LeaseRef(r.Name, branch), TrackingRef(r.Name, branch)} {
		args := []string{"update-ref", ref, commit}
		if commit == "" {
			args = []string{"update-ref", "-d", ref}
		}
		if err := r.m.Git.Run(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// SyncTarget fetches the remote's target (FetchTarget) and fast-forwards the local one there
// (FollowTarget), so task branches fork from and landings build on what the remote has. It
// returns the remote's tip.
func (r Remote) SyncTarget(ctx context.Context, target string) (string, error) {
	if err := r.FetchTarget(ctx, target, true); err != nil {
		return "", err
	}
	return r.FollowTarget(ctx, target)
}

// FetchTarget fetches the remote's target into its remote-tracking ref, also where that is no
// fast-forward when force. It moves nothing else, so it needs none of git-norma's locks: a
// remote slow to answer holds up nobody.
func (r Remote) FetchTarget(ctx context.Context, target string, force bool) error {
	refspec := "refs/heads/" + target + ":" + TrackingRef(r.Name, target)
	if force {
		refspec = "+" + refspec
	}
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", r.Name, refspec); err != nil {
		return remoteErr(fmt.Sprintf("fetch %s from %s", target, r.Name), err)
	}
	return nil
}

// FollowTarget fast-forwards the local target to the remote's as last fetched (its checkout
// through `git merge --ff-only`, which refuses to overwrite local edits), from the tip it
// reads now. A local target with commits the remote lacks is left alone (ErrTargetAhead). It
// returns the remote's tip.
func (r Remote) FollowTarget(ctx context.Context, target string) (string, error) {
	m, remote := r.m, r.Name
	remoteTip, err := m.Git.Output(ctx, "rev-parse", "--verify", TrackingRef(remote, target))
	if err != nil {
		return "", err
	}
	tip, err := m.branchTip(ctx, target)
	if err != nil {
		return "", err
	}
	if tip.commit == remoteTip {
		return remoteTip, nil
	}
	if common, err := m.commonDir(ctx); err == nil {
		// A rebase or bisect of the target would finish by moving it, over the fast-forward.
		if op := branchOperation(common, target, runsDir(m.RunsDir).agentGitDirs()); op != "" {
			return "", &LandError{Err: ErrTargetBusy, Detail: op}
		}
	}
	if behind, err := m.Git.IsAncestor(ctx, tip.commit, remoteTip); err != nil {
		return "", err
	} else if !behind {
		why := ErrTargetAhead
		if r.HadTip(ctx, target, tip.commit) {
			why = ErrTargetRewound
		}
		return "", &LandError{Err: why, Detail: fmt.Sprintf("%s is at %.10s, which %s/%s (%.10s) does not contain", target, tip.commit, remote, target, remoteTip)}
	}
	if tip.checkout, err = m.checkoutOf(ctx, target); err != nil {
		return "", err
	}
	return remoteTip, m.fastForward(ctx, target, tip, remoteTip, "norma: fast-forward to "+remote+"/"+target)
}

// HadTip says whether the remote's target was once at commit, as the reflog of its
// remote-tracking ref remembers (the local target only ever follows that ref, or lands there).
func (r Remote) HadTip(ctx context.Context, target, commit string) bool {
	out, err := r.m.Git.Output(ctx, "-c", "log.showSignature=false", "log", "-g", "--format=%H", TrackingRef(r.Name, target), "--")
	return err == nil && slices.Contains(strings.Fields(out), commit)
}

// pushLanding moves the remote's target from parent to commit by a push with a lease on
// exactly parent: another worker's landing there first makes it ErrTargetMoved, and the
// caller builds again. The local pre-push hook does not run (git-norma's own would run the
// gates again on the verified tree); the remote's hooks do. The task branch goes in the same
// atomic push with its own lease (PushTaskBranch): a worker presumed dead, whose task another
// took over and pushed to, cannot land it (ErrBranchTaken), whatever the tracker let through.
func (r Remote) pushLanding(ctx context.Context, o LandOptions, commit, parent, head string) error {
	m := r.m
	lease, err := r.branchLease(ctx, o.TaskBranch)
	if err != nil {
		return err
	}
	err = r.run(ctx, "push", "--quiet", "--atomic", "--no-verify", "--force-with-lease=refs/heads/"+o.Target+":"+parent, lease,
		r.Name, commit+":refs/heads/"+o.Target, head+":refs/heads/"+o.TaskBranch)
	if err != nil {
		// What the remote has now says why, whatever git's message (a lease refused, or the
		// remote's "cannot lock ref" when two pushes meet there).
		heads, lsErr := r.heads(ctx, o.Target, o.TaskBranch)
		switch {
		case errors.Is(err, ErrRemoteSilent) || lsErr != nil:
			return remoteErr("push the landing to "+r.Name, err)
		case heads[o.Target] == commit && heads[o.TaskBranch] == head:
			// The push got there, only its answer did not: the landing is on the remote.
		case heads[o.TaskBranch] != r.leased(ctx, o.TaskBranch):
			return branchTaken(o.TaskBranch, r.Name, heads[o.TaskBranch])
		case heads[o.Target] != parent:
			return &LandError{Err: ErrTargetMoved, Detail: fmt.Sprintf("%s/%s moved since it was fetched", r.Name, o.Target)}
		case git.ExitCodeOf(err) != 1:
			// Not the remote refusing refs (git's exit 1) but git failing to push (128: the
			// connection cut, say), which may pass: an error, not a refused landing.
			return remoteErr("push the landing to "+r.Name, err)
		default:
			return &LandError{Err: fmt.Errorf("%s %w", r.Name, ErrPushRefused), Detail: strings.TrimSpace(firstLine(errStderr(err)))}
		}
	}
	// What the remote has now, so that the next look at it needs no fetch to agree.
	_ = m.Git.Run(ctx, "update-ref", TrackingRef(r.Name, o.Target), commit)
	_ = r.pushedAt(ctx, o.TaskBranch, head)
	return nil
}

// ErrPushRefused: the remote refused a landing's push for a reason of its own (a protected
// branch, a token that may not push, a hook), not a lease: the PASS lands once it takes it.
var ErrPushRefused = errors.New("refused the push")

// ErrBranchTaken: the remote's copy of a task branch is not the one this clone last pushed or
// fetched — another worker pushed its own work there since, having taken the task over.
var ErrBranchTaken = errors.New("another worker pushed the task branch since")

// FetchTaskBranch fetches the remote's copy of a task branch and makes the local branch
// continue from it, so a task another worker left resumes from its last pushed step: a local
// branch missing or behind moves to the remote's, one ahead stays, one that diverged is kept
// under KeptPrefix and replaced (the remote's is the last holder's work). A remote without it
// is fine. The caller holds the task's lock; no worktree has the branch checked out.
func (r Remote) FetchTaskBranch(ctx context.Context, taskID, runID string) (kept string, err error) {
	m, remote := r.m, r.Name
	branch := TaskBranch(taskID)
	tracking := TrackingRef(remote, branch)
	heads, err := r.heads(ctx, branch)
	if err != nil {
		return "", remoteErr(fmt.Sprintf("look for %s on %s", branch, remote), err)
	}
	if heads[branch] == "" {
		// Not there (any more): nothing to resume from, and no lease to keep on it.
		return "", r.pushedAt(ctx, branch, "")
	}
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/"+branch+":"+tracking); err != nil {
		return "", remoteErr(fmt.Sprintf("fetch %s from %s", branch, remote), err)
	}
	theirs, err := m.Git.Output(ctx, "rev-parse", "--verify", tracking)
	if err != nil {
		return "", err
	}
	if err := m.Git.Run(ctx, "update-ref", LeaseRef(remote, branch), theirs); err != nil {
		return "", err
	}
	ours := m.refAt(ctx, "refs/heads/"+branch)
	if ours == "" {
		return "", m.Git.Run(ctx, "update-ref", "refs/heads/"+branch, theirs, "")
	}
	if ours == theirs {
		return "", nil
	}
	if ahead, err := m.Git.IsAncestor(ctx, theirs, ours); err != nil || ahead {
		return "", err
	}
	if behind, err := m.Git.IsAncestor(ctx, ours, theirs); err != nil {
		return "", err
	} else if !behind {
		kept = KeptPrefix + taskID + "/" + runID
		if err := m.Git.Run(ctx, "update-ref", kept, ours); err != nil {
			return "", err
		}
	}
	return kept, m.Git.Run(ctx, "update-ref", "refs/heads/"+branch, theirs, ours)
}

// PushTaskBranch pushes a task branch's commit with a lease on the copy this clone last pushed
// or fetched (branchLease): another worker's work there is never overwritten (ErrBranchTaken).
func (r Remote) PushTaskBranch(ctx context.Context, taskID, commit string) error {
	remote := r.Name
	branch := TaskBranch(taskID)
	lease, err := r.branchLease(ctx, branch)
	if err != nil {
		return err
	}
	if err := r.run(ctx, "push", "--quiet", "--no-verify", lease, remote, commit+":refs/heads/"+branch); err != nil {
		heads, lsErr := r.heads(ctx, branch)
		switch {
		case errors.Is(err, ErrRemoteSilent) || lsErr != nil:
			return remoteErr(fmt.Sprintf("push %s to %s", branch, remote), err)
		case heads[branch] == commit:
			// This very push got there while its answer did not.
		case heads[branch] != r.leased(ctx, branch):
			// Another worker's push, a person's, or an earlier one of this clone's that got
			// there unanswered: only the claim can say whose it is (TakeBackTaskBranch).
			return branchTaken(branch, remote, heads[branch])
		default:
			return remoteErr(fmt.Sprintf("push %s to %s", branch, remote), err)
		}
	}
	return r.pushedAt(ctx, branch, commit)
}

// DeleteTaskBranch deletes the remote's copy of a task's branch, under the lease of the copy
// this clone pushed (head, the one that landed): a copy another worker or person pushed since
// stays (ErrBranchTaken). This clone's lease and tracking refs of it go too.
func (r Remote) DeleteTaskBranch(ctx context.Context, taskID, head string) error {
	branch := TaskBranch(taskID)
	if err := r.run(ctx, "push", "--quiet", "--no-verify", "--force-with-lease=refs/heads/"+branch+":"+head, r.Name, ":refs/heads/"+branch); err != nil {
		heads, lsErr := r.heads(ctx, branch)
		switch {
		case errors.Is(err, ErrRemoteSilent) || lsErr != nil:
			return remoteErr(fmt.Sprintf("delete %s on %s", branch, r.Name), err)
		case heads[branch] != "":
			return branchTaken(branch, r.Name, heads[branch])
		}
		// gone already (this very push, unanswered, or a person's)
	}
	return r.pushedAt(ctx, branch, "")
}

// branchTaken is ErrBranchTaken for the remote's copy theirs ("" when the remote has none).
func branchTaken(branch, remote, theirs string) *LandError {
	at := "deleted"
	if theirs != "" {
		at = "at " + shortSHA(theirs)
	}
	return &LandError{Err: ErrBranchTaken, Detail: fmt.Sprintf("%s on %s, %s", branch, remote, at), Theirs: theirs}
}

// TakeBackTaskBranch lets the next push of a task branch go over the remote's copy theirs (a
// refused push's LandError.Theirs), for the run holding the task's claim: the claim says whose
// the branch is, not the order of pushes. That copy is kept under KeptPrefix, and returned; one
// that moved again since is not taken back (ErrBranchTaken), nor one deleted there.
func (r Remote) TakeBackTaskBranch(ctx context.Context, taskID, runID, theirs string) (kept string, err error) {
	m, remote := r.m, r.Name
	branch := TaskBranch(taskID)
	if theirs == "" {
		return "", r.pushedAt(ctx, branch, "")
	}
	kept = KeptPrefix + taskID + "/" + runID + "-overwritten-" + shortSHA(theirs)
	// --refmap= keeps git from moving the tracking ref along (its "opportunistic update"):
	// it must become exactly theirs, with the lease, or stay.
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=", remote, "+refs/heads/"+branch+":"+kept); err != nil {
		return "", remoteErr(fmt.Sprintf("fetch %s from %s", branch, remote), err)
	}
	if got := m.refAt(ctx, kept); got != theirs {
		_ = m.Git.Run(ctx, "update-ref", "-d", kept)
		return "", branchTaken(branch, remote, got)
	}
	return kept, r.pushedAt(ctx, branch, theirs)
}

// branchLease leases a task branch on the copy this clone last pushed or fetched (or none).
func (r Remote) branchLease(ctx context.Context, branch string) (string, error) {
	return "--force-with-lease=refs/heads/" + branch + ":" + r.leased(ctx, branch), nil
}

// leased is the copy of a task branch this clone last pushed or fetched ("" for none). A clone
// an older git-norma pushed from has no lease ref yet: its tracking ref stands in when the
// local branch has that commit (a push from there loses nothing of it), never another's work
// a git fetch brought in.
func (r Remote) leased(ctx context.Context, branch string) string {
	m := r.m
	if at := m.refAt(ctx, LeaseRef(r.Name, branch)); at != "" {
		return at
	}
	tracking := m.refAt(ctx, TrackingRef(r.Name, branch))
	if tracking == "" {
		return ""
	}
	if has, err := m.Git.IsAncestor(ctx, tracking, "refs/heads/"+branch); err != nil || !has {
		return ""
	}
	return tracking
}

// heads is where the remote's branches are now (a branch it does not have is missing).
func (r Remote) heads(ctx context.Context, branches ...string) (map[string]string, error) {
	var heads map[string]string
	err := r.bounded(ctx, "ls-remote", func(ctx context.Context) (err error) {
		heads, err = r.m.Git.RemoteHeads(ctx, r.Name, branches...)
		return err
	})
	return heads, err
}

// refAt is the commit a ref points at ("" when there is no such ref).
func (m *Manager) refAt(ctx context.Context, ref string) string {
	out, _ := m.Git.Output(ctx, "rev-parse", "--verify", "-q", ref)
	return strings.TrimSpace(out)
}

// shortSHA is a commit id cut to 12 characters, for messages and ref names.
func shortSHA(sha string) string { return sha[:min(12, len(sha))] }
