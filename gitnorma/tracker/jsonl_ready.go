package tracker

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Ready returns the open tasks nothing holds back, with bd's semantics (see MarkReady), by
// priority as bd lists them.
func (j *JSONL) Ready(ctx context.Context) ([]Task, error) {
	tasks, err := j.List(ctx)
	if err != nil {
		return nil, err
	}
	heads := make([]Head, len(tasks))
	for i, t := range tasks {
		heads[i] = HeadOf(t, noVerify)
	}
	MarkReady(heads)
	var ready []Task
	for i, h := range heads {
		if h.Ready {
			ready = append(ready, tasks[i])
		}
	}
	slices.SortStableFunc(ready, func(a, b Task) int { return a.Priority - b.Priority })
	return ready, nil
}

// Claim moves an open task to in_progress under the file lock, so two claims never both win.
func (j *JSONL) Claim(ctx context.Context, id, actor string) (Task, error) {
	var out Task
	err := j.updateTask(ctx, id, func(rec *record, now time.Time) error {
		if rec.wire.Status != StatusOpen {
			return fmt.Errorf("task %s is %s: %w", id, rec.wire.Status, ErrClaimed)
		}
		if a := rec.wire.Assignee; a != "" && a != actor {
			return fmt.Errorf("task %s is assigned to %s: %w", id, a, ErrClaimed)
		}
		rec.setStatus(StatusInProgress, "", now)
		if actor != "" {
			rec.wire.Assignee = actor
		}
		out = rec.task()
		return nil
	})
	return out, err
}

// AddDependency records that issue depends on dependsOn; an edge that exists already is kept
// as it is, and one that would close a blocking cycle is refused (as bd does).
func (j *JSONL) AddDependency(ctx context.Context, issue, dependsOn, depType string) error {
	if !ValidDependencyType(depType) {
		return fmt.Errorf("invalid dependency type %q", depType)
	}
	return j.update(ctx, func(f *issueFile) error {
		rec, target := f.find(issue), f.find(dependsOn)
		if rec == nil || target == nil {
			return fmt.Errorf("dependency %s → %s: %w", issue, dependsOn, ErrNotFound)
		}
		if slices.ContainsFunc(rec.deps, func(d Dependency) bool { return d.DependsOnID == dependsOn && d.Type == depType }) {
			return nil
		}
		if blockingTypes[depType] {
			if under, above := nested(f, issue, dependsOn); under != "" {
				return fmt.Errorf("task %s is under %s: a parent is done only when its children are, so one waiting for the other would leave both waiting for ever; a child already comes before its parent, no dependency needed", under, above)
			}
		}
		if blockingTypes[depType] && waitsFor(f, dependsOn, issue) {
			return fmt.Errorf("adding dependency %s → %s would create a cycle", issue, dependsOn)
		}
		now := bump(j.now(), rec.wire.UpdatedAt)
		rec.setDeps(append(rec.deps, Dependency{IssueID: issue, DependsOnID: dependsOn, Type: depType, CreatedAt: now, Metadata: "{}"}), now)
		return nil
	})
}

// RemoveDependency removes every dependency of issue on dependsOn; none is ErrNotFound.
func (j *JSONL) RemoveDependency(ctx context.Context, issue, dependsOn string) error {
	return j.updateTask(ctx, issue, func(rec *record, now time.Time) error {
		// The parent-child link is the task's place under its parent, not a dependency dep add
		// records: removing it would silently take the task out of its epic.
		kept := slices.DeleteFunc(slices.Clone(rec.deps), func(d Dependency) bool { return d.DependsOnID == dependsOn && d.Type != "parent-child" })
		if len(kept) == len(rec.deps) {
			return fmt.Errorf("task %s does not depend on %s: %w", issue, dependsOn, ErrNotFound)
		}
		rec.setDeps(kept, now)
		return nil
	})
}

// nested returns (a, b) or (b, a), descendant first, when one of the two tasks is under the
// other, else empty strings.
func nested(f *issueFile, a, b string) (string, string) {
	for _, p := range [][2]string{{a, b}, {b, a}} {
		seen := map[string]bool{}
		for rec := f.find(p[0]); rec != nil && !seen[rec.wire.ID]; rec = f.find(rec.parent()) {
			seen[rec.wire.ID] = true
			if rec.parent() == p[1] {
				return p[0], p[1]
			}
		}
	}
	return "", ""
}

// waitsFor reports whether from waits, however indirectly, for to or a task under it. A task
// waits for its blocking dependencies and its ancestors' (bd holds back what is under a
// blocked parent), and a parent for its children (it is done only when they are): a cycle
// through a parent leaves every task on it waiting as surely as one of dependencies alone.
func waitsFor(f *issueFile, from, to string) bool {
	parents, children := map[string]string{}, map[string][]string{}
	for _, rec := range f.records() {
		if p := rec.parent(); p != "" {
			parents[rec.wire.ID] = p
			children[p] = append(children[p], rec.wire.ID)
		}
	}
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		// up from id: to itself, or the dependencies of id and of its ancestors
		for a, steps := id, 0; a != "" && steps <= len(parents); a, steps = parents[a], steps+1 {
			if a == to {
				return true
			}
			if rec := f.find(a); rec != nil {
				for _, d := range rec.deps {
					if blockingTypes[d.Type] {
						stack = append(stack, d.DependsOnID)
					}
				}
			}
		}
		stack = append(stack, children[id]...)
	}
	return false
}

// Update applies notes, labels and status in one locked write.
func (j *JSONL) Update(ctx context.Context, id string, u Update) error {
	if u.Status != "" && !ValidStatus(u.Status) {
		return fmt.Errorf("invalid status %q", u.Status)
	}
	return j.updateTask(ctx, id, func(rec *record, now time.Time) error {
		switch {
		case u.EditNotes != nil:
			notes, err := u.EditNotes(rec.wire.Notes)
			if err != nil {
				return err
			}
			rec.wire.Notes = notes
		case u.Notes != nil:
			rec.wire.Notes = *u.Notes
		}
		labels := slices.DeleteFunc(slices.Clone(rec.wire.Labels), func(l string) bool { return slices.Contains(u.RemoveLabels, l) })
		rec.wire.Labels = normalizeLabels(append(labels, u.AddLabels...))
		if u.Status != "" {
			rec.setStatus(u.Status, "", now)
		}
		if u.Status == StatusOpen {
			rec.wire.Assignee = "" // handed back: nobody's, as bd's --assignee "" leaves it
		}
		if u.Title != nil {
			rec.wire.Title = *u.Title
		}
		if u.Description != nil {
			rec.wire.Description = *u.Description
		}
		if u.Acceptance != nil {
			rec.wire.AcceptanceCriteria = *u.Acceptance
		}
		if u.Priority != nil {
			rec.wire.Priority = *u.Priority
		}
		rec.wire.UpdatedAt, rec.dirty = now, true
		return nil
	})
}
