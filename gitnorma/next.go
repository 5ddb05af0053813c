package gitnorma

import (
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
}

// candidate is a ready task with what the policy sorts on.
type candidate struct {
	task      tracker.Task
	hasVerify bool
}

// Next applies the selection policy to the tracker's ready list: leaves only (bd's ready also
// returns epics and features), not blocked by git-norma's three-strike rule, inside the scope,
// then by priority, a Verify field first, oldest first. It costs one `ready` and one `list`.
func (a *App) Next(ctx context.Context, scope Scope, exclude []string) (Selection, error) {
	return a.next(ctx, scope, exclude, nil)
}

// next is Next, also skipping tasks related to busy ones (being run in parallel): no blocks
// dependency and no parent-child line between them, so parallel runs never step on each other.
func (a *App) next(ctx context.Context, scope Scope, exclude, busy []string) (Selection, error) {
	sel := Selection{Scope: a.scope(scope)}
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
	ready, err := tr.Ready(ctx)
	if err != nil {
		return sel, withCode(ExitFail, err)
	}
	all, err := tr.List(ctx)
	if err != nil {
		return sel, withCode(ExitFail, err)
	}
	cands := eligible(ready, all, sel.Scope, exclude)
	if len(busy) > 0 {
		cands = slices.DeleteFunc(cands, func(c candidate) bool { return relatedToAny(c.task.ID, busy, all) })
	}
	sel.Eligible = len(cands)
	if len(cands) == 0 {
		return sel, nil
	}
	slices.SortStableFunc(cands, byPolicy)
	best := cands[0]
	sel.TaskID, sel.Title = best.task.ID, best.task.Title
	sel.Reason = reason(best, cands, sel.Scope)
	return sel, nil
}

func (a *App) scope(s Scope) Scope {
	if s.Feature == "" && s.Epic == "" {
		return Scope{Feature: a.Config.Selection.ActiveFeature, Epic: a.Config.Selection.ActiveEpic}
	}
	return s
}

// eligible keeps ready leaves inside the scope that are not blocked or excluded.
func eligible(ready, all []tracker.Task, scope Scope, exclude []string) []candidate {
	parents := map[string]string{}
	hasChildren := map[string]bool{}
	for _, t := range all {
		parents[t.ID] = t.Parent
		if t.Parent != "" {
			hasChildren[t.Parent] = true
		}
	}
	root := scope.Feature
	if root == "" {
		root = scope.Epic
	}
	var cands []candidate
	for _, t := range ready {
		switch {
		case hasChildren[t.ID], t.IssueType == "epic", slices.Contains(t.Labels, LabelBlocked), slices.Contains(exclude, t.ID):
			continue
		case root != "" && !descends(t.ID, root, parents):
			continue
		}
		cands = append(cands, candidate{task: t, hasVerify: len(loop.ParseReadyContract(t.Description).Verify) > 0})
	}
	return cands
}

// relatedToAny reports whether id depends on, blocks, descends from or contains a busy task.
func relatedToAny(id string, busy []string, all []tracker.Task) bool {
	parents := map[string]string{}
	deps := map[string][]tracker.Dependency{}
	for _, t := range all {
		parents[t.ID] = t.Parent
		deps[t.ID] = t.Dependencies
	}
	for _, b := range busy {
		if descends(id, b, parents) || descends(b, id, parents) {
			return true
		}
		for _, pair := range [][2]string{{id, b}, {b, id}} {
			for _, d := range deps[pair[0]] {
				if d.DependsOnID == pair[1] {
					return true
				}
			}
		}
	}
	return false
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
func byPolicy(a, b candidate) int {
	if a.task.Priority != b.task.Priority {
		return a.task.Priority - b.task.Priority
	}
	if a.hasVerify != b.hasVerify {
		if a.hasVerify {
			return -1
		}
		return 1
	}
	if c := a.task.CreatedAt.Compare(b.task.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.task.ID, b.task.ID)
}

// reason says in one line why the winner won.
func reason(best candidate, cands []candidate, scope Scope) string {
	parts := []string{fmt.Sprintf("P%d", best.task.Priority)}
	if scope.Feature != "" {
		parts = append(parts, "under active feature "+scope.Feature)
	} else if scope.Epic != "" {
		parts = append(parts, "under active epic "+scope.Epic)
	}
	parts = append(parts, "leaf "+orType(best.task.IssueType))
	if best.hasVerify {
		parts = append(parts, "has Verify")
	} else {
		parts = append(parts, "no Verify field")
	}
	tied := 0
	for _, c := range cands[1:] {
		if c.task.Priority == best.task.Priority && c.hasVerify == best.hasVerify {
			tied++
		}
	}
	if tied > 0 {
		parts = append(parts, fmt.Sprintf("oldest of %d tied (created %s)", tied+1, best.task.CreatedAt.UTC().Format(time.RFC3339)))
	}
	return fmt.Sprintf("%s; %d eligible", strings.Join(parts, ", "), len(cands))
}

func orType(t string) string {
	if t == "" {
		return "task"
	}
	return t
}
