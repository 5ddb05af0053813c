package tracker

import (
	"context"
	"slices"
	"time"
)

// Head is what selection reads of a task: everything but its texts, and whether its
// description names a Verify command. The embedded backlog keeps the heads of its tasks in an
// index, so choosing among 10,000 tasks decodes none of them (see JSONL.Heads).
type Head struct {
	ID        string
	Title     string
	Status    string
	Priority  int
	IssueType string
	CreatedAt time.Time
	Parent    string
	Labels    []string
	Deps      []DepHead
	// HasVerify says the description has a Verify command (the caller's VerifyFunc decides).
	HasVerify bool
	// Ready and HasChildren are facts of the backlog as a whole, kept with each head (see
	// MarkReady, MarkChildren): `bd ready` would list the task; some task has it as parent.
	Ready, HasChildren bool
}

// DepHead is one dependency of a head: what it depends on, and how.
type DepHead struct {
	On   string
	Type string
}

// HeadKeeper is a backlog that keeps its tasks' heads (the embedded one, see JSONL.Heads): a
// selection reads the heads instead of every task, and a page of tasks is read at once.
type HeadKeeper interface {
	Heads(ctx context.Context) ([]Head, error)
	GetMany(ctx context.Context, ids []string) ([]Task, error)
}

// VerifyFunc says whether a task's description names a Verify command: the one fact of the
// description selection sorts on, decided by the caller (the ready contract is the loop's).
type VerifyFunc func(description string) bool

func noVerify(string) bool { return false }

// HeadOf is t's head.
func HeadOf(t Task, verify VerifyFunc) Head {
	h := Head{ID: t.ID, Title: t.Title, Status: t.Status, Priority: t.Priority, IssueType: t.IssueType,
		CreatedAt: t.CreatedAt, Parent: t.Parent, Labels: slices.Clone(t.Labels), HasVerify: verify(t.Description)}
	for _, d := range t.Dependencies {
		h.Deps = append(h.Deps, DepHead{On: d.DependsOnID, Type: d.Type})
	}
	return h
}

// MarkReady sets Ready on the heads `bd ready` would list: open tasks with no open `blocks`
// (or conditional-blocks, waits-for) dependency and no blocked or deferred ancestor, epics
// and features included.
func MarkReady(all []Head) {
	byID := make(map[string]*Head, len(all))
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	for i, h := range all {
		all[i].Ready = h.Status == StatusOpen && !blockedByDeps(h, byID) && !heldByAncestor(h, byID)
	}
}

// MarkChildren sets HasChildren on the heads some task names as parent.
func MarkChildren(all []Head) {
	parents := make(map[string]bool)
	for _, h := range all {
		if h.Parent != "" {
			parents[h.Parent] = true
		}
	}
	for i := range all {
		all[i].HasChildren = parents[all[i].ID]
	}
}

// blockingTypes are the dependency types that keep a task out of `ready` in bd.
var blockingTypes = map[string]bool{"blocks": true, "conditional-blocks": true, "waits-for": true}

func blockedByDeps(h Head, byID map[string]*Head) bool {
	for _, d := range h.Deps {
		if dep, ok := byID[d.On]; ok && blockingTypes[d.Type] && dep.Status != StatusClosed {
			return true
		}
	}
	return false
}

// heldByAncestor reports an ancestor that is blocked, deferred, or itself waiting on an open
// blocker: bd keeps a whole subtree out of `ready` then.
func heldByAncestor(h Head, byID map[string]*Head) bool {
	// A parent cycle (a broken record) ends the walk after as many steps as there are tasks.
	for p, steps := h.Parent, 0; p != "" && p != h.ID && steps < len(byID); steps++ {
		parent, ok := byID[p]
		if !ok {
			return false
		}
		if s := parent.Status; s == StatusBlocked || s == StatusDeferred || blockedByDeps(*parent, byID) {
			return true
		}
		p = parent.Parent
	}
	return false
}
