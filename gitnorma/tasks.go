package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// TaskSpec is a task as the user describes it on the command line.
type TaskSpec struct {
	Title       string
	Description string
	Acceptance  string
	// Verify commands are written into the description's Ready Contract `Verify:` field.
	Verify   []string
	Type     string
	Priority int
	Parent   string
}

// Backlog is what the task commands work on: the tracker the config selects, how task ids
// look here, and who is adding tasks. It holds no more of the repository than that.
type Backlog struct {
	// tracker opens the tracker, once what the command was given has been checked.
	tracker func() (tracker.Tracker, error)
	// validID refuses what is not a task id of this backlog before it reaches the tracker.
	validID func(id string) error
	// actor is who adds a task (the user's git name, as bd records it).
	actor  func(ctx context.Context) string
	redact redact.Redactor
}

// Backlog is the repository's backlog; its tracker is opened by the first use case that gets
// past checking what it was given.
func (a *App) Backlog() *Backlog {
	return &Backlog{tracker: a.Tracker, validID: a.ValidateTaskID, actor: a.Repo.actor, redact: a.redact}
}

// open checks the task ids it is given and opens the tracker.
func (b *Backlog) open(ids ...string) (tracker.Tracker, error) {
	for _, id := range ids {
		if err := b.validID(id); err != nil {
			return nil, err
		}
	}
	return b.tracker()
}

// Add creates a task.
func (b *Backlog) Add(ctx context.Context, s TaskSpec) (tracker.Task, error) {
	if strings.TrimSpace(s.Title) == "" {
		return tracker.Task{}, usagef("", "the task title is empty")
	}
	if s.Parent != "" {
		if err := b.validID(s.Parent); err != nil {
			return tracker.Task{}, err
		}
	}
	if s.Type != "" && !tracker.ValidType(s.Type) {
		return tracker.Task{}, usagef(`use one of: task, bug, feature, epic, chore, decision, spike, story, milestone (for another kind of commit, start the title with it: "docs: ...")`,
			"unknown task type %q", s.Type)
	}
	for _, v := range s.Verify {
		if strings.TrimSpace(v) == "" || strings.Contains(v, "\n") {
			return tracker.Task{}, usagef("", "--verify takes one single-line shell command, got %q", v)
		}
	}
	tr, err := b.open()
	if err != nil {
		return tracker.Task{}, err
	}
	if err := refuseClosedParent(ctx, tr, s.Parent); err != nil {
		return tracker.Task{}, err
	}
	t, err := tr.Create(ctx, tracker.NewTask{
		Title: strings.TrimSpace(s.Title), Description: withVerify(s.Description, s.Verify),
		Acceptance: s.Acceptance, Type: s.Type, Priority: s.Priority, Parent: s.Parent, Actor: b.actor(ctx),
	})
	if errors.Is(err, tracker.ErrNotFound) {
		return t, failf("list tasks with: git norma task list", "%v", err)
	}
	return t, err
}

// refuseClosedParent refuses a new child under a closed parent: open under a finished task,
// selection would run it, and nothing would close its parent again. An unknown parent is left
// to Create, which says so.
func refuseClosedParent(ctx context.Context, tr tracker.Tracker, parent string) error {
	if parent == "" {
		return nil
	}
	p, err := tr.Get(ctx, parent)
	switch {
	case errors.Is(err, tracker.ErrNotFound):
		return nil
	case err != nil:
		return err
	case p.Status == tracker.StatusClosed:
		return failf("reopen it first (git norma task reopen "+parent+"), or pick an open parent",
			"parent task %s is closed: a child added under it would be open under a finished task", parent)
	}
	return nil
}

// withVerify appends a Ready Contract Verify field as a fenced block, which carries any
// single-line command (backticks and all) unchanged.
func withVerify(description string, verify []string) string {
	if len(verify) == 0 {
		return description
	}
	var b strings.Builder
	if d := strings.TrimRight(description, "\n"); d != "" {
		b.WriteString(d + "\n\n")
	}
	b.WriteString("Verify:\n```sh\n")
	for _, v := range verify {
		b.WriteString(strings.TrimSpace(v) + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}

// actor is the user's git name, recorded as the task's creator like bd does.
func (r *Repo) actor(ctx context.Context) string {
	name, _ := r.Git.Config(ctx, "user.name")
	return name
}

// Show returns one task.
func (b *Backlog) Show(ctx context.Context, id string) (tracker.Task, error) {
	tr, err := b.open(id)
	if err != nil {
		return tracker.Task{}, err
	}
	t, err := tr.Get(ctx, id)
	return t, taskErr(id, err)
}

// DescribeTask renders a task for `task show`.
func DescribeTask(t tracker.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s\n", t.ID, t.Title)
	fmt.Fprintf(&b, "status: %s  type: %s  priority: P%d", t.Status, t.IssueType, t.Priority)
	if t.Parent != "" {
		fmt.Fprintf(&b, "  parent: %s", t.Parent)
	}
	b.WriteString("\n")
	if len(t.Labels) > 0 {
		fmt.Fprintf(&b, "labels: %s\n", strings.Join(t.Labels, ", "))
	}
	if t.CloseReason != "" {
		fmt.Fprintf(&b, "closed: %s\n", t.CloseReason)
	}
	if t.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(t.Description, "\n"))
	}
	if t.AcceptanceCriteria != "" {
		fmt.Fprintf(&b, "\nAcceptance:\n%s\n", strings.TrimRight(t.AcceptanceCriteria, "\n"))
	}
	return b.String()
}
