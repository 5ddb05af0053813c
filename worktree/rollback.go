package worktree

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// AttemptsPrefix is where rolled-back work is kept: refs/norma/attempts/<task-id>/<n>.
const AttemptsPrefix = "refs/norma/attempts/"

// Rollback moves the task branch and worktree back to to, what it drops saved first under
// refs/norma/attempts/<task>/<n>. It returns that ref, or "" when HEAD already was at to.
func (w *Workspace) Rollback(ctx context.Context, to string) (string, error) {
	w.settled = nil
	head, err := w.git.Output(ctx, "rev-parse", "HEAD")
	if err != nil || head == to {
		return "", err
	}
	ref, err := w.nextAttemptRef(ctx)
	if err != nil {
		return "", err
	}
	// Create-only (old value all zeros): never overwrite an earlier attempt.
	if err := w.git.Run(ctx, "update-ref", "-m", "norma: keep rolled-back attempt", ref, head, strings.Repeat("0", len(head))); err != nil {
		return "", err
	}
	return ref, w.resetClean(ctx, to)
}

func (w *Workspace) nextAttemptRef(ctx context.Context) (string, error) {
	prefix := AttemptsPrefix + w.taskID + "/"
	out, err := w.git.Output(ctx, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return "", err
	}
	n := 0
	for _, ref := range strings.Split(out, "\n") {
		if k, err := strconv.Atoi(strings.TrimPrefix(ref, prefix)); err == nil && k > n {
			n = k
		}
	}
	return fmt.Sprintf("%s%d", prefix, n+1), nil
}
