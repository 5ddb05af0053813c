package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrTargetAhead: the local target branch holds commits its remote lacks (or the two
// diverged). Landing through the remote would take them along; git-norma never pushes the
// user's own commits, so it refuses.
var ErrTargetAhead = errors.New("the local target branch has commits its remote lacks")

// TrackingRef is where a remote's branch is fetched to.
func TrackingRef(remote, branch string) string { return "refs/remotes/" + remote + "/" + branch }

// SyncTarget fetches the remote's target into its remote-tracking ref and brings the local
// target there: fast-forwarded, its checkout (if it is checked out) through `git merge
// --ff-only`, which refuses to overwrite local edits. A task branch then forks from, and a
// landing is built on, exactly what the remote has. A local target with commits the remote
// lacks is left alone (ErrTargetAhead). It returns the remote's tip.
func (m *Manager) SyncTarget(ctx context.Context, remote, target string) (string, error) {
	tracking := TrackingRef(remote, target)
	if err := m.Git.Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/"+target+":"+tracking); err != nil {
		return "", fmt.Errorf("fetch %s from %s: %s", target, remote, firstLine(errStderr(err)))
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
	if behind, err := m.Git.IsAncestor(ctx, tip.commit, remoteTip); err != nil {
		return "", err
	} else if !behind {
		return "", &LandError{Err: ErrTargetAhead, Detail: fmt.Sprintf("%s is at %.10s, which %s/%s (%.10s) does not contain", target, tip.commit, remote, target, remoteTip)}
	}
	if tip.checkout != "" {
		return remoteTip, m.fastForwardCheckout(ctx, tip.checkout, remoteTip)
	}
	if err := m.Git.Run(ctx, "update-ref", "-m", "norma: fast-forward to "+remote+"/"+target, "refs/heads/"+target, remoteTip, tip.commit); err != nil {
		return "", &LandError{Err: ErrTargetMoved, Detail: strings.TrimSpace(errStderr(err))}
	}
	return remoteTip, nil
}

// pushLanding moves the remote's target from parent to commit with a compare-and-swap (a push
// with a lease on exactly parent): a landing of another worker that got there first makes it
// fail with ErrTargetMoved, and the caller builds the landing again on what is there now. The
// remote's hooks run as for any push; the local pre-push hook does not (the tree was verified
// by this git-norma, and git-norma's own hook would run the gates a second time).
func (m *Manager) pushLanding(ctx context.Context, remote, target, commit, parent string) error {
	err := m.Git.Run(ctx, "push", "--quiet", "--atomic", "--no-verify",
		"--force-with-lease=refs/heads/"+target+":"+parent, remote, commit+":refs/heads/"+target)
	if err != nil {
		stderr := errStderr(err)
		if strings.Contains(stderr, "[rejected]") || strings.Contains(stderr, "stale info") {
			return &LandError{Err: ErrTargetMoved, Detail: fmt.Sprintf("%s/%s moved since it was fetched", remote, target)}
		}
		return fmt.Errorf("push the landing to %s: %s", remote, firstLine(stderr))
	}
	// What the remote has now, so that the next look at it needs no fetch to agree.
	_ = m.Git.Run(ctx, "update-ref", TrackingRef(remote, target), commit)
	return nil
}
