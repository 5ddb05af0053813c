package gitnorma

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// Whether the task is still this run's to land: its claim, and its status in the backlog.

// otherHolder is who holds t's claim when it is not run's own actor (the assignee run's claim
// would have left), "" when it is, or the tracker keeps no assignee for claims.
func (ld *lander) otherHolder(ctx context.Context, st *store.Store, runID string, t tracker.Task) (string, error) {
	run, err := st.Run(ctx, runID)
	if err != nil {
		return "", err
	}
	if want := ld.claimAssignee(ctx, run); want != "" && t.Assignee != want {
		return loop.OrDash(t.Assignee), nil
	}
	return "", nil
}

// holdsClaim says whether run's claim of the task still holds: the task is in progress,
// claimed by run's actor, and its state is run's own (the claim wrote it). The last tells two
// runs of one actor apart (a worker id reused across a CI job's attempts), so the one that
// lost the claim never takes the branch back. A tracker that cannot be asked says no.
func (ld *lander) holdsClaim(ctx context.Context, st *store.Store, runID, taskID string) bool {
	tr, err := ld.tracker()
	if err != nil {
		return false
	}
	t, err := tr.Get(ctx, taskID)
	if err != nil || t.Status != tracker.StatusInProgress {
		return false
	}
	if state, err := taskstate.Read(tr, t); err != nil || state.RunID != runID {
		return false
	}
	holder, err := ld.otherHolder(ctx, st, runID, t)
	return err == nil && holder == ""
}

// takeBackBranch makes the next push of a task branch go over the remote copy pushErr found
// (a worker's that lost the claim, or a person's) or make it again (deleted there), keeps
// the copy under refs/norma/kept/, and records both with why it may.
func (ld *lander) takeBackBranch(ctx context.Context, st *store.Store, runID, taskID string, pushErr error, why string) error {
	var le *worktree.LandError
	if !errors.As(pushErr, &le) {
		return pushErr
	}
	kept, err := ld.repo.Worktrees(ctx).Remote(ld.cfg.Remote).TakeBackTaskBranch(ctx, taskID, runID, le.Theirs)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%v, but %s", pushErr, why)
	if kept != "" {
		msg += ", kept as " + kept
	}
	_ = st.AppendEvent(ctx, runID, store.Event{TS: ld.now(), Type: "branch_taken_back", Message: msg,
		Data: map[string]any{"overwritten": le.Theirs, "kept": kept}})
	return nil
}

// claimDecides is why a run holding a task's claim pushes over another's copy of its branch.
func claimDecides(taskID string) string {
	return fmt.Sprintf("this run holds task %s's claim: its push goes over that copy", taskID)
}

// checkStillOpen refuses to land a task closed or claimed by someone else meanwhile: a claim
// whose assignee is no longer this run's actor was taken over (a lease ran out, a person) —
// the fence that keeps a worker presumed dead from landing over the one that took its task.
func (ld *lander) checkStillOpen(ctx context.Context, st *store.Store, req landRequest) error {
	tr, err := ld.tracker()
	if err != nil {
		return err
	}
	t, err := tr.Get(ctx, req.task.ID)
	if err != nil {
		return err
	}
	if t.Status == tracker.StatusInProgress && req.claimedByUs {
		holder, err := ld.otherHolder(ctx, st, req.runID, t)
		if err != nil {
			return err
		}
		if holder != "" {
			return &landRefusal{reason: fmt.Errorf("task %s was taken over: it is claimed by %s now", req.task.ID, holder),
				hint: "its new holder runs it; this run's work stays on " + worktree.TaskBranch(req.task.ID)}
		}
	}
	switch {
	case req.leaseLost:
		return &landRefusal{reason: fmt.Errorf("task %s was taken back from this run while it worked: its lease was reclaimed", req.task.ID),
			hint: "the task is someone else's to run now; this run's work stays on " + worktree.TaskBranch(req.task.ID)}
	case t.Status == tracker.StatusOpen:
		return nil
	case t.Status == tracker.StatusInProgress && req.claimedByUs:
		return nil
	}
	why := ""
	if t.Status == tracker.StatusClosed && t.CloseReason != "" {
		why = fmt.Sprintf(" (closed: %s)", loop.OneLine(t.CloseReason, 200)) // landed elsewhere, say
	}
	return &landRefusal{reason: fmt.Errorf("task %s is %s in the tracker, no longer open%s", req.task.ID, t.Status, why),
		hint: "reopen the task if its work should still land, then: git norma land " + req.task.ID}
}
