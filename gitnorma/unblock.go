package gitnorma

import (
	"context"
	"slices"

	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// Unblock gives a task blocked by the three-strike rule back to selection: the
// norma-blocked label goes, and the strike count and its reason in the task's state are
// cleared (people's notes stay as they are). It says whether the task was blocked.
func (b *Backlog) Unblock(ctx context.Context, id string) (bool, error) {
	t, err := b.Show(ctx, id)
	if err != nil {
		return false, err
	}
	tr, err := b.open()
	if err != nil {
		return false, err
	}
	st, err := taskstate.Read(tr, t)
	if err != nil {
		return false, failf("repair the task's notes first", "task %s: %v", id, err)
	}
	if !slices.Contains(t.Labels, LabelBlocked) && st.FailedRuns == 0 && st.Blocked == "" && t.Status != tracker.StatusBlocked {
		return false, nil
	}
	unblock := func(s *taskstate.State) { s.FailedRuns, s.Blocked = 0, "" }
	unblock(&st.State)
	u, _, err := taskstate.Write(st, b.redact, unblock)
	if err != nil {
		return false, err
	}
	u.RemoveLabels = []string{LabelBlocked}
	if t.Status == tracker.StatusBlocked {
		u.Status = tracker.StatusOpen
	}
	return true, taskErr(id, tr.Update(ctx, id, u))
}

// Accept takes a task an agent filed (filed_tasks "review") into the backlog: its
// norma-proposed label goes, so selection takes it and run accepts it. It says whether the
// task was waiting for review.
func (b *Backlog) Accept(ctx context.Context, id string) (bool, error) {
	t, err := b.Show(ctx, id)
	if err != nil || !slices.Contains(t.Labels, LabelProposed) {
		return false, err
	}
	return true, b.Label(ctx, id, nil, []string{LabelProposed})
}
