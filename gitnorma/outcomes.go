package gitnorma

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// outcome is what applying a Plan outcome or Do's discoveries changed in the backlog.
type outcome struct {
	// created lists the new issue ids, in creation order; proposed those of them that wait
	// for review (labelled norma-proposed).
	created, proposed []string
	// next is the task to go on with ("" to stop).
	next string
	// why says why the run does not go on, when next is "".
	why string
}

// applier applies Plan's outcomes and Do's discoveries: agents never touch the tracker. Each
// creation is journaled as it happens, and an issue an earlier attempt that crashed midway
// made (same title under the same parent) is reused instead of duplicated.
type applier struct {
	repo  *Repo
	now   func() time.Time
	tr    tracker.Tracker
	st    *store.Store
	runID string
	all   []tracker.Task
	// review files new tasks as proposed (filed_tasks "review"): no run takes them until a
	// person accepts them.
	review bool
}

func (a *App) newApplier(ctx context.Context, st *store.Store, runID string) (*applier, error) {
	tr, err := a.Tracker()
	if err != nil {
		return nil, err
	}
	all, err := tr.List(ctx)
	if err != nil {
		return nil, err
	}
	return &applier{repo: a.Repo, now: a.Now, tr: tr, st: st, runID: runID, all: all, review: a.Config.FiledTasks != config.FiledWork}, nil
}

// decompose creates the children under the task, their blocks edges, and names the child to
// go on with — if it is Ready (a Verify field, nothing blocking it).
func (ap *applier) decompose(ctx context.Context, task tracker.Task, p *loop.Plan) (outcome, error) {
	var out outcome
	ids := map[string]string{}
	for _, c := range p.Children {
		id, err := ap.ensure(ctx, task.ID, c, &out, func(tracker.Task) bool { return true }) // the task's own children
		if err != nil {
			return out, err
		}
		ids[c.Key] = id
	}
	for _, c := range p.Children {
		for _, k := range c.Blocks {
			if err := ap.link(ctx, ids[k], ids[c.Key], "blocks"); err != nil {
				return out, err
			}
		}
	}
	next := p.Children[slices.IndexFunc(p.Children, func(c loop.NewIssue) bool { return c.Key == p.NextTaskID })]
	out.next = ids[next.Key]
	next = ap.asStored(next, out)
	if why := notReady(next, p.Children); why != "" {
		out.next, out.why = "", fmt.Sprintf("the child Plan named (%s) is not Ready: %s", ids[next.Key], why)
	}
	ap.awaitReview(&out)
	return out, nil
}

// blocked creates the missing prerequisite next to the task (same parent), makes the task wait
// for it, and goes on with it when it is Ready.
func (ap *applier) blocked(ctx context.Context, task tracker.Task, p *loop.Plan) (outcome, error) {
	var out outcome
	pre := *p.Prerequisite
	pre.Blocks = nil
	id, err := ap.ensure(ctx, task.Parent, pre, &out, discoveredFrom(task.ID))
	if err != nil {
		return out, err
	}
	if err := ap.link(ctx, task.ID, id, "blocks"); err != nil {
		return out, err
	}
	if err := ap.link(ctx, id, task.ID, "discovered-from"); err != nil {
		return out, err
	}
	out.next = id
	pre = ap.asStored(pre, out)
	if why := notReady(pre, nil); why != "" {
		out.next, out.why = "", fmt.Sprintf("the prerequisite %s is not Ready: %s", id, why)
	}
	ap.awaitReview(&out)
	return out, nil
}

// discoveries files Do's found work under the task's parent, linked discovered-from the task.
func (ap *applier) discoveries(ctx context.Context, task tracker.Task, found []loop.Discovery) (outcome, error) {
	var out outcome
	for i, d := range found {
		id, err := ap.ensure(ctx, task.Parent, loop.NewIssue{Key: fmt.Sprint(i), Title: d.Title, Type: d.Kind, Description: d.Description}, &out, discoveredFrom(task.ID))
		if err != nil {
			return out, err
		}
		if err := ap.link(ctx, id, task.ID, "discovered-from"); err != nil {
			return out, err
		}
	}
	return out, nil
}

// ensure returns the id of the issue titled n.Title under parent, creating it if needed. An
// open one is reused only when from says an earlier attempt made it: a title alone must not
// hand an agent a task of yours to work and land.
func (ap *applier) ensure(ctx context.Context, parent string, n loop.NewIssue, out *outcome, from func(tracker.Task) bool) (string, error) {
	// An agent writes it: one line, nothing that would work a terminal when listed.
	title := loop.Printable(strings.Join(strings.Fields(n.Title), " "))
	for _, t := range ap.all {
		if t.Parent == parent && t.Title == title && t.Status != tracker.StatusClosed && from(t) {
			return t.ID, nil
		}
	}
	prio := tracker.PriorityUnset
	if n.Priority != nil {
		prio = *n.Priority
	}
	typ := n.Type
	if !tracker.ValidType(typ) {
		typ = "task"
	}
	var labels []string
	if ap.review {
		labels = []string{LabelProposed}
	}
	t, err := ap.tr.Create(ctx, tracker.NewTask{Title: title, Type: typ, Description: loop.Printable(n.Description),
		Acceptance: loop.Printable(n.Acceptance), Priority: prio, Parent: parent, Labels: labels, Actor: ap.repo.actor(ctx)})
	if err != nil {
		return "", fmt.Errorf("create %q: %w", title, err)
	}
	ap.all = append(ap.all, t)
	out.created = append(out.created, t.ID)
	if ap.review {
		out.proposed = append(out.proposed, t.ID)
	}
	ap.journal(ctx, "issue_created", fmt.Sprintf("created %s %q under %s", t.ID, title, cmp.Or(parent, "the top level")),
		map[string]any{"id": t.ID, "key": n.Key, "parent": parent})
	return t.ID, nil
}

// asStored is n, the issue Plan named to go on with (out.next), as the backlog holds it: a
// task of yours with no Verify line must not go on with the Verify the Plan wrote for it.
func (ap *applier) asStored(n loop.NewIssue, out outcome) loop.NewIssue {
	i := slices.IndexFunc(ap.all, func(t tracker.Task) bool { return t.ID == out.next })
	if i >= 0 && !slices.Contains(out.created, out.next) {
		n.Description = ap.all[i].Description
	}
	return n
}

// awaitReview stops the run from going on with a task an agent proposed: its Verify lines,
// the agent's, would be all that checks what lands for it.
func (ap *applier) awaitReview(out *outcome) {
	i := slices.IndexFunc(ap.all, func(t tracker.Task) bool { return t.ID == out.next })
	if out.next == "" || i < 0 || !slices.Contains(ap.all[i].Labels, LabelProposed) {
		return
	}
	proposed := out.proposed
	if !slices.Contains(proposed, out.next) { // filed by an earlier attempt
		proposed = append(slices.Clone(proposed), out.next)
	}
	out.why = fmt.Sprintf("%s waits for your review, its Verify lines are the agent's: read it (git norma task show %s), then accept: git norma task accept %s",
		out.next, out.next, strings.Join(proposed, " "))
	out.next = ""
}

// discoveredFrom says a task was filed from task id (its discovered-from link), as that
// task's earlier attempts' prerequisites and discoveries are.
func discoveredFrom(id string) func(tracker.Task) bool {
	return func(t tracker.Task) bool {
		return slices.ContainsFunc(t.Dependencies, func(d tracker.Dependency) bool {
			return d.DependsOnID == id && d.Type == "discovered-from"
		})
	}
}

// link adds issue → dependsOn unless the backlog already has it.
func (ap *applier) link(ctx context.Context, issue, dependsOn, depType string) error {
	for _, t := range ap.all {
		if t.ID == issue && slices.ContainsFunc(t.Dependencies, func(d tracker.Dependency) bool {
			return d.DependsOnID == dependsOn && d.Type == depType
		}) {
			return nil
		}
	}
	if err := ap.tr.AddDependency(ctx, issue, dependsOn, depType); err != nil {
		return err
	}
	ap.journal(ctx, "dependency_added", fmt.Sprintf("%s %s %s", issue, depType, dependsOn), nil)
	return nil
}

func (ap *applier) journal(ctx context.Context, typ, msg string, data any) {
	_ = ap.st.AppendEvent(ctx, ap.runID, store.Event{TS: ap.now(), Type: typ, Message: msg, Data: data})
}

// notReady says why a new issue cannot be worked on yet ("" when it can): it needs a Verify
// field, and no sibling of this plan may block it.
func notReady(n loop.NewIssue, siblings []loop.NewIssue) string {
	if len(loop.ParseReadyContract(n.Description).Verify) == 0 {
		return "its description has no Verify field"
	}
	for _, s := range siblings {
		if slices.Contains(s.Blocks, n.Key) {
			return "it waits for " + s.Key
		}
	}
	return ""
}
