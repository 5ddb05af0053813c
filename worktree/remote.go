package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// ErrTargetAhead: the local target branch holds commits its remote lacks (or the two
// diverged). Landing through the remote would take them along; git-norma never pushes the
// user's own commits, so it refuses.
var ErrTargetAhead = errors.New("the local target branch has commits its remote lacks")

// DefaultRemoteTimeout is how long one fetch, ls-remote or push may take.
const DefaultRemoteTimeout = 10 * time.Minute

// Remote is a git remote that task branches and landings go through, for workers on several
// machines: the target is synced from it, task branches are fetched from and pushed to it with
// leases, and a landing is a compare-and-swap push to it.
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

// bounded makes call, the git command what talking to the remote, under RemoteTimeout; a call
// that runs out says so.
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

// SyncTarget fetches the remote's target into its remote-tracking ref and brings the local
// target there: fast-forwarded, its checkout (if it is checked out) through `git merge
// --ff-only`, which refuses to overwrite local edits. A task branch then forks from, and a
// landing is built on, exactly what the remote has. A local target with commits the remote
// lacks is left alone (ErrTargetAhead). It returns the remote's tip.
func (r Remote) SyncTarget(ctx context.Context, target string) (string, error) {
	m, remote := r.m, r.Name
	tracking := TrackingRef(remote, target)
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/"+target+":"+tracking); err != nil {
		return "", remoteErr(fmt.Sprintf("fetch %s from %s", target, remote), err)
	}
	remoteTip, err := m.Git.Output(ctx, "rev-parse", "--verify", tracking)
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
		if op := branchOperation(common, target, m.agentGitDirs()); op != "" {
			return "", &LandError{Err: ErrTargetBusy, Detail: op}
		}
	}
	if behind, err := m.Git.IsAncestor(ctx, tip.commit, remoteTip); err != nil {
		return "", err
	} else if !behind {
		return "", &LandError{Err: ErrTargetAhead, Detail: fmt.Sprintf("%s is at %.10s, which %s/%s (%.10s) does not contain", target, tip.commit, remote, target, remoteTip)}
	}
	if tip.checkout, err = m.checkoutOf(ctx, target); err != nil {
		return "", err
	}
	return remoteTip, m.fastForward(ctx, target, tip, remoteTip, "norma: fast-forward to "+remote+"/"+target)
}

// pushLanding moves the remote's target from parent to commit with a compare-and-swap (a push
// with a lease on exactly parent): a landing of another worker that got there first makes it
// fail with ErrTargetMoved, and the caller builds the landing again on what is there now. The
// remote's hooks run as for any push; the local pre-push hook does not (the tree was verified
// by this git-norma, and git-norma's own hook would run the gates a second time).
//
// The task branch goes in the same atomic push, with its own lease (see PushTaskBranch): a
// worker presumed dead whose task another worker took over and pushed to cannot land it
// (ErrBranchTaken), even should the tracker have let it through.
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
		case heads[o.TaskBranch] != m.refAt(ctx, TrackingRef(r.Name, o.TaskBranch)):
			return branchTaken(o.TaskBranch, r.Name, heads[o.TaskBranch])
		case heads[o.Target] != parent:
			return &LandError{Err: ErrTargetMoved, Detail: fmt.Sprintf("%s/%s moved since it was fetched", r.Name, o.Target)}
		default:
			return remoteErr("push the landing to "+r.Name, err)
		}
	}
	// What the remote has now, so that the next look at it needs no fetch to agree.
	_ = m.Git.Run(ctx, "update-ref", TrackingRef(r.Name, o.Target), commit)
	_ = m.Git.Run(ctx, "update-ref", TrackingRef(r.Name, o.TaskBranch), head)
	return nil
}

// ErrBranchTaken: the remote's copy of a task branch is not the one this clone last pushed or
// fetched — another worker pushed its own work there since, having taken the task over.
var ErrBranchTaken = errors.New("another worker pushed the task branch since")

// FetchTaskBranch brings the remote's copy of a task branch into its remote-tracking ref and
// makes the local branch continue from it, so a task another worker started (and died on,
// or gave up) resumes from its last pushed step: a local branch that is missing or behind is
// moved to the remote's; one ahead of it (this clone's steps not pushed yet) stays; one that
// diverged is kept under KeptPrefix and replaced by the remote's — the remote's is the work
// of whoever held the task last. A task branch the remote does not have is fine. The caller
// holds the task's lock, and no worktree has the branch checked out.
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
		_ = m.Git.Run(ctx, "update-ref", "-d", tracking)
		return "", nil
	}
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/"+branch+":"+tracking); err != nil {
		return "", remoteErr(fmt.Sprintf("fetch %s from %s", branch, remote), err)
	}
	theirs, err := m.Git.Output(ctx, "rev-parse", "--verify", tracking)
	if err != nil {
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

// PushTaskBranch pushes a task branch's commit to the remote with a lease on the copy this
// clone last pushed or fetched (its remote-tracking ref; none: it must not exist there): a
// worker that took the task over and pushed its own work makes it fail with ErrBranchTaken,
// and its work is never overwritten.
func (r Remote) PushTaskBranch(ctx context.Context, taskID, commit string) error {
	m, remote := r.m, r.Name
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
		case heads[branch] != m.refAt(ctx, TrackingRef(remote, branch)):
			// Another worker's push, a person's, or an earlier one of this clone's that got
			// there unanswered: only the claim can say whose it is (TakeBackTaskBranch).
			return branchTaken(branch, remote, heads[branch])
		default:
			return remoteErr(fmt.Sprintf("push %s to %s", branch, remote), err)
		}
	}
	return m.Git.Run(ctx, "update-ref", TrackingRef(remote, branch), commit)
}

// branchTaken is ErrBranchTaken for the remote's copy theirs ("" when the remote has none).
func branchTaken(branch, remote, theirs string) *LandError {
	at := "deleted"
	if theirs != "" {
		at = "at " + shortSHA(theirs)
	}
	return &LandError{Err: ErrBranchTaken, Detail: fmt.Sprintf("%s on %s, %s", branch, remote, at), Theirs: theirs}
}

// TakeBackTaskBranch makes the next push of a task branch go over the remote's copy theirs —
// the one a refused push found (LandError.Theirs) — for the run that holds the task's claim
// when someone else pushed there meanwhile (a worker that lost the claim, presumed dead, then
// not; a person). The claim says whose the branch is, not the order of pushes. That copy is
// kept under KeptPrefix, so nothing of it is lost; a copy that moved again since it was judged
// is not taken back (ErrBranchTaken), nor one deleted on the remote, which the next push
// simply makes again. It returns the ref the other copy is kept under.
func (r Remote) TakeBackTaskBranch(ctx context.Context, taskID, runID, theirs string) (kept string, err error) {
	m, remote := r.m, r.Name
	branch := TaskBranch(taskID)
	tracking := TrackingRef(remote, branch)
	if theirs == "" {
		return "", m.Git.Run(ctx, "update-ref", "-d", tracking)
	}
	kept = KeptPrefix + taskID + "/" + runID + "-overwritten-" + shortSHA(theirs)
	// --refmap= keeps git from moving the tracking ref along (its "opportunistic update"): it
	// is the lease, and must become exactly theirs or stay.
	if err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=", remote, "+refs/heads/"+branch+":"+kept); err != nil {
		return "", remoteErr(fmt.Sprintf("fetch %s from %s", branch, remote), err)
	}
	if got := m.refAt(ctx, kept); got != theirs {
		_ = m.Git.Run(ctx, "update-ref", "-d", kept)
		return "", branchTaken(branch, remote, got)
	}
	return kept, m.Git.Run(ctx, "update-ref", tracking, theirs)
}

// branchLease is the --force-with-lease argument for a task branch: the copy of it this clone
// last pushed or fetched, or "must not exist" when it has none.
func (r Remote) branchLease(ctx context.Context, branch string) (string, error) {
	m, remote := r.m, r.Name
	expect, err := m.Git.Output(ctx, "rev-parse", "--verify", "-q", TrackingRef(remote, branch))
	if err != nil && git.ExitCodeOf(err) != 1 {
		return "", err
	}
	return "--force-with-lease=refs/heads/" + branch + ":" + strings.TrimSpace(expect), nil
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
