package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// TaskFilter narrows task list: by status, by label (all of them), or to what the tracker
// calls ready (bd ready: open, not blocked by an open task).
type TaskFilter struct {
	Status string
	Labels []string
	Ready  bool
	// Limit is the most tasks listed (0: all).
	Limit int
}

// keeps says whether a task of status with labels passes the status and label filters.
func (f TaskFilter) keeps(status string, labels []string) bool {
	if f.Status != "" && status != f.Status {
		return false
	}
	for _, l := range f.Labels {
		if !slices.Contains(labels, l) {
			return false
		}
	}
	return true
}

// Filter lists the tasks f lets through, in storage order, at most f.Limit of them; more
// says some were left out. The embedded backlog decodes only the records it needs to fill the
// page (the whole graph for --ready).
func (b *Backlog) Filter(ctx context.Context, f TaskFilter) (tasks []tracker.Task, more bool, err error) {
	if f.Status != "" && !tracker.ValidStatus(f.Status) {
		return nil, false, usagef("use open, in_progress, blocked, deferred or closed", "unknown status %q", f.Status)
	}
	if f.Limit < 0 {
		return nil, false, usagef("use 0 to list every task", "--limit must be 0 or more, got %d", f.Limit)
	}
	tr, err := b.open()
	if err != nil {
		return nil, false, err
	}
	if hs, ok := tr.(headSource); ok && f.Ready {
		if tasks, more, ok, err := readyPage(ctx, hs, f); ok || err != nil {
			return tasks, more, err
		}
	}
	if j, ok := tr.(tracker.Scanner); ok && !f.Ready {
		err = j.Scan(ctx, func(t tracker.Task) bool {
			if !f.keeps(t.Status, t.Labels) {
				return true
			}
			if f.Limit > 0 && len(tasks) == f.Limit {
				more = true
				return false
			}
			tasks = append(tasks, t)
			return true
		})
		return tasks, more, err
	}
	list := tr.List
	if f.Ready {
		list = tr.Ready
	}
	if tasks, err = list(ctx); err != nil {
		return nil, false, err
	}
	tasks = slices.DeleteFunc(tasks, func(t tracker.Task) bool { return !f.keeps(t.Status, t.Labels) })
	if f.Limit > 0 && len(tasks) > f.Limit {
		return tasks[:f.Limit], true, nil
	}
	return tasks, false, nil
}

// readyPage is a page of the ready tasks, by priority as bd ready lists them, from a backlog
// that keeps its heads: the page's tasks are the only ones decoded. ok is false when the
// tracker keeps none (bd).
func readyPage(ctx context.Context, hs headSource, f TaskFilter) (tasks []tracker.Task, more, ok bool, err error) {
	all, ok, err := hs.Heads(ctx)
	if !ok || err != nil {
		return nil, false, ok, err
	}
	var ready []tracker.Head
	for _, h := range all {
		if h.Ready && f.keeps(h.Status, h.Labels) {
			ready = append(ready, h)
		}
	}
	slices.SortStableFunc(ready, func(a, b tracker.Head) int { return a.Priority - b.Priority })
	if f.Limit > 0 && len(ready) > f.Limit {
		ready, more = ready[:f.Limit], true
	}
	ids := make([]string, len(ready))
	for i, h := range ready {
		ids[i] = h.ID
	}
	tasks, err = hs.GetMany(ctx, ids)
	return tasks, more, true, err
}

// Close closes a task by hand (reason: why, for the tracker's history). When that closes the
// last open child of a parent still open, note says so and what to do: a run that lands the
// last child checks the parent's Verify on that commit and closes it (completeParents), but a
// close by hand lands nothing to check, and a tracker edit runs no commands — nor does bd close
// a parent. Without the note the parent would stay open unseen: selection never picks one.
// A task with open children is refused unless force (which also goes past blocking tasks).
func (b *Backlog) Close(ctx context.Context, id, reason string, force bool) (note string, err error) {
	reason = cmp.Or(reason, "closed by hand (git norma task close)")
	err = b.change(id, func(tr tracker.Tracker) error {
		t, err := tr.Get(ctx, id)
		if err != nil {
			return err
		}
		if fc, ok := tr.(tracker.ForceCloser); ok && force {
			err = fc.CloseForced(ctx, id, reason)
		} else {
			err = closeUnlessParent(ctx, tr, t, reason)
		}
		if err == nil {
			note = parentComplete(ctx, tr, t.Parent)
		}
		return err
	})
	return note, err
}

// closeUnlessParent closes a task whose children are all closed, on either backlog: bd refuses
// an epic with open children, and the embedded backlog closed one (--force goes past).
func closeUnlessParent(ctx context.Context, tr tracker.Tracker, t tracker.Task, reason string) error {
	if t.Status != tracker.StatusClosed { // one closed already is closed again, with the new reason
		if open, _, err := openChildren(ctx, tr, t); err != nil || len(open) > 0 {
			return cmp.Or(err, failf("close them first, or close it anyway: git norma task close --force "+t.ID,
				"task %s has children still open: %s", t.ID, strings.Join(open, ", ")))
		}
	}
	return tr.SetStatus(ctx, t.ID, tracker.StatusClosed, reason)
}

// parentComplete says what to do with parent (a task's just closed, "" for none) once all its
// children are closed and it is not ("" otherwise, or when the backlog could not tell).
func parentComplete(ctx context.Context, tr tracker.Tracker, parent string) string {
	if parent == "" {
		return ""
	}
	p, err := tr.Get(ctx, parent)
	if err != nil || p.Status == tracker.StatusClosed {
		return ""
	}
	children, err := tracker.Children(ctx, tr, p.ID)
	if err != nil || slices.ContainsFunc(children, func(c tracker.Task) bool { return c.Status != tracker.StatusClosed }) {
		return ""
	}
	if len(loop.ParseReadyContract(p.Description).Verify) == 0 {
		return fmt.Sprintf("parent %s: all its children are closed; its own acceptance has no Verify command, so closing it is yours: git norma task close %s", p.ID, p.ID)
	}
	return fmt.Sprintf("parent %s: all its children are closed; it stays open until checked (a run checks it on the commit it lands, a close by hand checks nothing): git norma check %s, then git norma task close %s",
		p.ID, p.ID, p.ID)
}

// Reopen makes a closed (or any) task open again; note says when its parent is closed (a run
// closes a parent only when its last child lands, so nothing would reopen it).
func (b *Backlog) Reopen(ctx context.Context, id string) (note string, err error) {
	err = b.change(id, func(tr tracker.Tracker) error {
		if err := tr.SetStatus(ctx, id, tracker.StatusOpen, ""); err != nil {
			return err
		}
		if t, err := tr.Get(ctx, id); err == nil && t.Parent != "" {
			if p, err := tr.Get(ctx, t.Parent); err == nil && p.Status == tracker.StatusClosed {
				note = fmt.Sprintf("parent %s is closed, with a child open again: reopen it too if its work is not done: git norma task reopen %s", p.ID, p.ID)
			}
		}
		return nil
	})
	return note, err
}

// change opens the tracker for task id and makes one change to it.
func (b *Backlog) change(id string, fn func(tr tracker.Tracker) error) error {
	tr, err := b.open(id)
	if err != nil {
		return err
	}
	return taskErr(id, fn(tr))
}

// Label adds and removes labels of a task in one change.
func (b *Backlog) Label(ctx context.Context, id string, add, remove []string) error {
	return b.change(id, func(tr tracker.Tracker) error {
		return tr.Update(ctx, id, tracker.Update{AddLabels: add, RemoveLabels: remove})
	})
}

// AddDependency records that id depends on dependsOn (a blocks dependency unless depType
// says otherwise), as bd dep add does.
func (b *Backlog) AddDependency(ctx context.Context, id, dependsOn, depType string) error {
	depType = cmp.Or(depType, "blocks")
	if err := b.validID(dependsOn); err != nil {
		return err
	}
	if id == dependsOn {
		return usagef("", "task %s cannot depend on itself", id)
	}
	tr, err := b.open(id)
	if err != nil {
		return err
	}
	if _, err := tr.Get(ctx, dependsOn); err != nil {
		return taskErr(dependsOn, err)
	}
	return taskErr(id, tr.AddDependency(ctx, id, dependsOn, depType))
}

// TaskEdit is what task edit changes; nil leaves a field as it is.
type TaskEdit struct {
	Title, Description, Acceptance *string
	Priority                       *int
}

// Edit changes a task's title, description, acceptance criteria or priority.
func (b *Backlog) Edit(ctx context.Context, id string, e TaskEdit) error {
	if e.Title != nil && strings.TrimSpace(*e.Title) == "" {
		return usagef("", "the task title is empty")
	}
	if e.Priority != nil && (*e.Priority < 0 || *e.Priority > 4) {
		return usagef("use 0 (highest) to 4", "priority %d is out of range", *e.Priority)
	}
	if e == (TaskEdit{}) {
		return usagef("say what to change: --title, --description, --acceptance or --priority", "nothing to change")
	}
	return b.change(id, func(tr tracker.Tracker) error {
		return tr.Update(ctx, id, tracker.Update{Title: e.Title, Description: e.Description, Acceptance: e.Acceptance, Priority: e.Priority})
	})
}

// RemoveDependency removes what id depends on dependsOn for; that there is such a
// dependency is checked first (bd says "removed" even when there is none).
func (b *Backlog) RemoveDependency(ctx context.Context, id, dependsOn string) error {
	if err := b.validID(dependsOn); err != nil {
		return err
	}
	t, err := b.Show(ctx, id)
	if err != nil {
		return err
	}
	// A child's link to its parent is no dependency to remove: with it the task would leave
	// its epic, unseen (and bd keeps one link per pair: removing would take that one).
	if !slices.ContainsFunc(t.Dependencies, func(d tracker.Dependency) bool {
		return d.IssueID == id && d.DependsOnID == dependsOn && d.Type != "parent-child"
	}) {
		return failf("see its dependencies with: git norma task show "+id, "task %s does not depend on %s", id, dependsOn)
	}
	return b.change(id, func(tr tracker.Tracker) error { return tr.RemoveDependency(ctx, id, dependsOn) })
}

// taskErr gives a tracker's error about task id its exit code and hint.
func taskErr(id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tracker.ErrNotFound):
		return failf("list tasks with: git norma task list", "no task %s in the backlog", id)
	}
	return fmt.Errorf("task %s: %w", id, err)
}
