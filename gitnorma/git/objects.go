package git

import (
	"context"
	"fmt"
	"strings"
)

// CommitTree is the tree id of commit, asked of git (never read from the object files: what
// decides a landing is not parsed by hand from a directory an unconfined agent could write).
func (r Runner) CommitTree(ctx context.Context, commit string) (string, error) {
	tree, err := r.Output(ctx, "rev-parse", "--verify", "-q", commit+"^{commit}^{tree}")
	if err != nil {
		return "", fmt.Errorf("read the tree of %.10s: %w", commit, err)
	}
	return tree, nil
}

// IsAncestor says whether anc is an ancestor of desc (or desc itself). Only git's "no" (exit
// 1) is false; anything else that failed (an unknown commit) is an error.
func (r Runner) IsAncestor(ctx context.Context, anc, desc string) (bool, error) {
	err := r.Run(ctx, "merge-base", "--is-ancestor", anc, desc)
	if ExitCodeOf(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// Commits lists the commits reachable from include and not from exclude (git rev-list).
func (r Runner) Commits(ctx context.Context, include, exclude []string) ([]string, error) {
	args := append(append([]string{"rev-list"}, include...), "--not")
	out, err := r.Output(ctx, append(args, exclude...)...)
	return strings.Fields(out), err
}
