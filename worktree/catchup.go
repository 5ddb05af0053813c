package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// KeptPrefix holds task branches a run had to start over from: refs/norma/kept/<task>/<run>.
// They are never deleted by git-norma except by `git norma prune`'s retention.
const KeptPrefix = "refs/norma/kept/"

// CatchUp is what bringing an existing task branch up to date with its target did.
type CatchUp struct {
	// Merged is the merge commit that brought the target's new commits into the branch, From
	// the branch's head before (the merge's first parent).
	Merged string `json:"merged,omitempty"`
	From   string `json:"from,omitempty"`
	// Kept is where the branch was saved when it conflicted (Conflicts) and restarted.
	Kept      string   `json:"kept,omitempty"`
	Conflicts []string `json:"conflicts,omitempty"`
}

// MergeCommit commits the merge of target into branch (its first parent) in object space, or
// returns a *LandError listing the conflicting paths.
func (m *Manager) MergeCommit(ctx context.Context, target, branch, msg string) (string, error) {
	tree, err := m.mergeTree(ctx, target, branch)
	if err != nil {
		return "", err
	}
	commit, err := m.Git.Input(ctx, strings.NewReader(msg), "commit-tree", tree, "-p", branch, "-p", target, "-F", "-")
	if err != nil {
		return "", fmt.Errorf("merge %.10s into %.10s: %w", target, branch, err)
	}
	return commit, nil
}

// catchUp makes an existing task branch contain its target before a run, so what landed
// meanwhile is its base and its landing cannot conflict with it. A conflicting branch is
// kept under KeptPrefix and restarted from the target: nothing of it is lost.
func (m *Manager) catchUp(ctx context.Context, o CreateOptions, branch string) (CatchUp, error) {
	ref, target := "refs/heads/"+branch, "refs/heads/"+o.Target
	if onBranch, err := m.Git.IsAncestor(ctx, target, ref); err == nil && onBranch {
		return CatchUp{}, nil // nothing landed on the target since the branch forked
	}
	old, err := m.Git.Output(ctx, "rev-parse", "--verify", ref)
	if err != nil {
		return CatchUp{}, err
	}
	tip, err := m.branchTip(ctx, o.Target)
	if err != nil {
		return CatchUp{}, err
	}
	merged, err := m.MergeCommit(ctx, tip.commit, old, fmt.Sprintf("norma: merge %s into %s\n\nNorma-Run: %s\n", o.Target, branch, o.RunID))
	var le *LandError
	switch {
	case err == nil:
		return CatchUp{Merged: merged, From: old}, m.Git.Run(ctx, "update-ref", "-m", "norma: catch up with "+o.Target, ref, merged, old)
	case errors.As(err, &le):
		kept := KeptPrefix + o.TaskID + "/" + o.RunID
		if m.refAt(ctx, kept) != "" {
			// The run kept this clone's own copy there already: it went its own way from the
			// remote's, which it took (Remote.FetchTaskBranch) and which conflicts now.
			kept += "-conflict"
		}
		if err := m.Git.Run(ctx, "update-ref", "-m", "norma: keep conflicting branch", kept, old, ""); err != nil {
			return CatchUp{}, err
		}
		err := m.Git.Run(ctx, "update-ref", "-m", "norma: restart from "+o.Target, ref, tip.commit, old)
		return CatchUp{Kept: kept, Conflicts: le.Paths}, err
	default:
		return CatchUp{}, err
	}
}

// maxCatchUps bounds the merges CaughtUpFrom looks through, three git calls each: a stopped
// run leaves one or two (its catch-up, its landing's merge), but anyone who can push the task
// branch can make a chain of any length; past it, Do only runs again.
const maxCatchUps = 32

// CaughtUpFrom says head is from with only catch-ups on top: merges of the target each
// exactly as catchUp makes them (two parents, the first the branch's head before, the second
// on the target, and their merge's tree). A commit that only looks like one (its message)
// does not pass, nor one that brings in anything but the target's commits, nor a chain of more
// than maxCatchUps.
func (m *Manager) CaughtUpFrom(ctx context.Context, head, from, target string) bool {
	for n := 0; head != from; n++ {
		if n == maxCatchUps {
			return false
		}
		out, err := m.Git.Output(ctx, "show", "-s", "--format=%T %P", head)
		f := strings.Fields(out)
		if err != nil || len(f) != 3 {
			return false
		}
		if onTarget, err := m.Git.IsAncestor(ctx, f[2], "refs/heads/"+target); err != nil || !onTarget {
			return false
		}
		if tree, err := m.mergeTree(ctx, f[2], f[1]); err != nil || tree != f[0] {
			return false
		}
		head = f[1]
	}
	return true
}
