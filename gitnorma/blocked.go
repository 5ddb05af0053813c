package gitnorma

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// refuseBlocked refuses a task that open tasks block (its "blocks" dependencies): landed
// first, its work would be on the target ahead of theirs, and bd refuses to close it then
// (exit 3, naming them; run --force goes ahead anyway).
func refuseBlocked(ctx context.Context, tr tracker.Tracker, t tracker.Task) error {
	var open []string
	first := "" // the first open blocker
	for _, d := range t.Dependencies {
		if d.Type != "blocks" || d.IssueID != t.ID {
			continue
		}
		status := d.DependsOnStatus
		if status == "" {
			blocker, err := tr.Get(ctx, d.DependsOnID)
			if err != nil {
				return err
			}
			status = blocker.Status
		}
		if status != tracker.StatusClosed {
			first = cmp.Or(first, d.DependsOnID)
			open = append(open, fmt.Sprintf("%s (%s)", d.DependsOnID, status))
		}
	}
	if len(open) == 0 {
		return nil
	}
	return &Error{Kind: ErrLandRefused,
		Err:  fmt.Errorf("task %s is blocked by open %s: its work would land ahead of theirs, and the tracker would not close it", t.ID, strings.Join(open, ", ")),
		Hint: "run " + first + " first (git norma run " + first + "), or run this one anyway: git norma run --force " + t.ID}
}
