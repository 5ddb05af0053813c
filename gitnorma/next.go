package gitnorma

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// Scope is the focus of selection (spec "Selection Policy"): only tasks under the active
// feature, else under the active epic, are eligible.
type Scope struct {
	Feature string `json:"active_feature_id,omitempty"`
	Epic    string `json:"active_epic_id,omitempty"`
}

// Selection is the task `next` picks and why.
type Selection struct {
	TaskID string `json:"selected_task_id"`
	Title  string `json:"title,omitempty"`
	// Reason is the short selection_reason of the spec.
	Reason string `json:"selection_reason"`
	// Eligible is how many ready leaf tasks were considered (after scope and exclusions).
	Eligible int   `json:"eligible"`
	Scope    Scope `json:"scope"`
	// AwaitingReview counts the tasks that would be eligible but for their norma-proposed
	// label: an agent filed them, and they wait for a person to accept them.
	AwaitingReview int `json:"awaiting_review,omitempty"`
}

// ReviewHint says how many tasks wait for review and where to find them ("" for none).
func (s Selection) ReviewHint() string {
	if s.AwaitingReview == 0 {
		return ""
	}
	return fmt.Sprintf("; %d filed by agents wait for your review (git norma task list --label %s)", s.AwaitingReview, LabelProposed)
}

// Next applies the selection policy to the tracker's ready list: leaves only (bd's ready also
// returns epics and features), not blocked by git-norma's three-strike rule, inside the scope,
// not related by a blocks dependency or parent-child line to a busy task (run in parallel: so
// parallel runs never step on each other), then by priority, a Verify field first, oldest
// first. With bd it costs one `ready` and one `list`; the embedded backlog reads its heads.
func (a *App) Next(ctx context.Context, scope Scope, exclude, busy []string) (Selection, error) {
	sel := Selection{Scope: scope}
	if scope == (Scope{}) {
		sel.Scope = Scope{Feature: a.Config.Selection.ActiveFeature, Epic: a.Config.Selection.ActiveEpic}
	}
	for _, id := range []string{sel.Scope.Feature, sel.Scope.Epic} {
		if id != "" {
			if err := a.ValidateTaskID(id); err != nil {
				return sel, err
			}
		}
	}
	tr, err := a.Tracker()
	if err != nil {
		return sel, err
	}
	all, err := selectionHeads(ctx, tr)
	if err != nil {
		return sel, err
	}
	cands, proposed := eligible(all, sel.Scope, exclude)
	if len(busy) > 0 {
		related := relatedToAny(busy, all)
		cands = slices.DeleteFunc(cands, func(c *tracker.Head) bool { return related(c.ID) })
	}
	sel.Eligible, sel.AwaitingReview = len(cands), proposed
	if len(cands) == 0 {
		return sel, nil
	}
	slices.SortStableFunc(cands, byPolicy)
	best := cands[0]
	sel.TaskID, sel.Title = best.ID, best.Title
	sel.Reason = reason(best, cands, sel.Scope)
	return sel, nil
}

// selectionHeads is the backlog as selection reads it: the heads of all tasks, marked ready
// and with children. The embedded backlog keeps them so; bd is asked `list`, and `ready`,
// whose answer is its own.
func selectionHeads(ctx context.Context, tr tracker.Tracker) (all []tracker.Head, err error) {
	switch hs := tr.(type) {
	case headSource:
		if all, ok, err := hs.Heads(ctx); ok || err != nil {
			return all, err
		}
	case tracker.HeadKeeper: // the embedded backlog unwrapped (git norma run inside a step)
		return hs.Heads(ctx)
	}
	readyTasks, err := tr.Ready(ctx)
	if err != nil {
		return nil, err
	}
	allTasks, err := tr.List(ctx)
	if err != nil {
		return nil, err
	}
	ready := map[string]bool{}
	for _, t := range readyTasks {
		ready[t.ID] = true
	}
	for _, t := range allTasks {
		h := tracker.HeadOf(t, hasVerify)
		h.Ready = ready[t.ID]
		all = append(all, h)
	}
	tracker.MarkChildren(all)
	return all, nil
}

// headSource is a tracker that may keep its tasks' heads (see stamp.Tracker.Heads), and then
// reads the tasks of a page of them at once.
type headSource interface {
	Heads(ctx context.Context) ([]tracker.Head, bool, error)
	GetMany(ctx context.Context, ids []string) ([]tracker.Task, error)
}

// hasVerify says a task's description names a Verify command (the ready contract's field).
func hasVerify(description string) bool {
	return len(loop.ParseReadyContract(description).Verify) > 0
}

// eligible keeps ready leaves inside the scope that are not blocked, proposed or excluded
// (pointers into all: sorting thousands of them moves pointers, not heads), and counts the
// proposed ones.
func eligible(all []tracker.Head, scope Scope, exclude []string) (cands []*tracker.Head, proposed int) {
	root := cmp.Or(scope.Feature, scope.Epic)
	var parents map[string]string
	if root != "" {
		parents = make(map[string]string, len(all))
		for _, t := range all {
			parents[t.ID] = t.Parent
		}
	}
	for i, t := range all {
		switch {
		case !t.Ready, t.HasChildren, t.IssueType == "epic", slices.Contains(t.Labels, LabelBlocked), slices.Contains(exclude, t.ID):
			continue
		case root != "" && !descends(t.ID, root, parents):
			continue
		case slices.Contains(t.Labels, LabelProposed):
			proposed++
			continue
		}
		cands = append(cands, &all[i])
	}
	return cands, proposed
}

// relatedToAny says whether a task depends on, blocks, descends from or contains a busy task
// (its maps are built once for all candidates).
func relatedToAny(busy []string, all []tracker.Head) func(id string) bool {
	parents := map[string]string{}
	deps := map[string][]tracker.DepHead{}
	for _, t := range all {
		parents[t.ID] = t.Parent
		deps[t.ID] = t.Deps
	}
	dependsOn := func(a, b string) bool {
		return slices.ContainsFunc(deps[a], func(d tracker.DepHead) bool { return d.On == b })
	}
	return func(id string) bool {
		return slices.ContainsFunc(busy, func(b string) bool {
			return descends(id, b, parents) || descends(b, id, parents) || dependsOn(id, b) || dependsOn(b, id)
		})
	}
}

// descends reports whether id is below root in the parent-child tree.
func descends(id, root string, parents map[string]string) bool {
	seen := map[string]bool{}
	for p := parents[id]; p != "" && !seen[p]; p = parents[p] {
		if p == root {
			return true
		}
		seen[p] = true
	}
	return false
}

// byPolicy orders by priority (0 first), then tasks with a Verify field, then oldest.
func byPolicy(a, b *tracker.Head) int {
	if a.Priority != b.Priority {
		return a.Priority - b.Priority
	}
	if a.HasVerify != b.HasVerify {
		if a.HasVerify {
			return -1
		}
		return 1
	}
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// reason says in one line why the winner won.
func reason(best *tracker.Head, cands []*tracker.Head, scope Scope) string {
	parts := []string{fmt.Sprintf("P%d", best.Priority)}
	if scope.Feature != "" {
		parts = append(parts, "under active feature "+scope.Feature)
	} else if scope.Epic != "" {
		parts = append(parts, "under active epic "+scope.Epic)
	}
	parts = append(parts, "leaf "+cmp.Or(best.IssueType, "task"))
	if best.HasVerify {
		parts = append(parts, "has Verify")
	} else {
		parts = append(parts, "no Verify field")
	}
	tied := 0
	for _, c := range cands[1:] {
		if c.Priority == best.Priority && c.HasVerify == best.HasVerify {
			tied++
		}
	}
	if tied > 0 {
		parts = append(parts, fmt.Sprintf("oldest of %d tied (created %s)", tied+1, best.CreatedAt.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("%s; %d eligible", strings.Join(parts, ", "), len(cands))
}
