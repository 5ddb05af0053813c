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

// openChildren names t's children not yet closed, each with its status, and the first of them.
func openChildren(ctx context.Context, tr tracker.Tracker, t tracker.Task) (open []string, first string, err error) {
	if t.NoChildren {
		return nil, "", nil
	}
	children, err := tracker.Children(ctx, tr, t.ID)
	for _, c := range children {
		if c.Status != tracker.StatusClosed {
			first = cmp.Or(first, c.ID)
			open = append(open, fmt.Sprintf("%s (%s)", c.ID, c.Status))
		}
	}
	return open, first, err
}

// refuseOpenChildren refuses a task with children not yet closed, as refuseBlocked refuses
// one open tasks block: a parent is done when its children are, and the landing of the last
// of them closes it once its own Verify passes (completeParents); run itself, its PASS would
// close it over open children (bd refuses that close). run --force goes ahead anyway: a Plan
// whose decomposition stopped midway decomposes it again, reusing them. The task's record may
// say it has no children (bd's show), and then nothing is asked; the embedded backlog answers
// from its heads.
func refuseOpenChildren(ctx context.Context, tr tracker.Tracker, t tracker.Task) error {
	open, first, err := openChildren(ctx, tr, t)
	if err != nil || len(open) == 0 {
		return err
	}
	flag := "--active-epic"
	if t.IssueType == "feature" {
		flag = "--active-feature"
	}
	return &Error{Kind: ErrLandRefused,
		Err: fmt.Errorf("task %s has children still open, %s: a parent is done when its children are, and git-norma checks and closes it when the last of them lands",
			t.ID, strings.Join(open, ", ")),
		Hint: fmt.Sprintf("run %s first (git norma run %s), or all of them: git norma loop %s %s; or run this one anyway: git norma run --force %s",
			first, first, flag, t.ID, t.ID)}
}
