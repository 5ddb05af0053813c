// Package tracker is git-norma's view of the Beads backlog.
//
// The loop only needs to create, read and move tasks through their statuses, so it talks to a
// small Tracker interface. Two backends satisfy it: the bd CLI when it is installed, and the
// embedded JSONL backend (JSONL) that keeps tasks in .beads/issues.jsonl in bd's own record
// format, so a user who installs bd later can `bd import` them without conversion.
package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// ErrNotFound lets callers tell a missing task (a typo, a task deleted elsewhere) apart from a
// broken backlog. Errors wrap it with the id: "task norma-x1: task not found".
var ErrNotFound = errors.New("task not found")

// Statuses git-norma moves tasks through. They are bd's names, so files stay importable.
const (
	// StatusOpen marks a task that can be picked up.
	StatusOpen = "open"
	// StatusInProgress marks a task someone (usually a run) has claimed.
	StatusInProgress = "in_progress"
	// StatusBlocked marks a task that waits on something outside the backlog.
	StatusBlocked = "blocked"
	// StatusDeferred marks a task put aside on purpose, so selection skips it.
	StatusDeferred = "deferred"
	// StatusClosed marks finished work; bd requires closed_at to be set exactly when closed.
	StatusClosed = "closed"
)

// PriorityUnset asks Create for bd's default priority (2). It exists because 0 is a real
// priority in bd (the highest), so the zero value of an int cannot mean "not given".
const PriorityUnset = -1

// DefaultPriority is bd's default priority, used when NewTask.Priority is PriorityUnset.
const DefaultPriority = 2

// Dependency is bd's dependency record: IssueID depends on DependsOnID. It keeps bd's field
// names so records round-trip through `bd export` and `bd import` unchanged. A "parent-child"
// record points from the child to its parent.
type Dependency struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
	// Metadata is bd's JSON-encoded metadata, normally "{}".
	Metadata string `json:"metadata,omitempty"`
	// DependsOnStatus is the status of the task depended on, where the tracker gives it
	// with the dependency (bd show does); "" when it does not.
	DependsOnStatus string `json:"-"`
}

// Task is one backlog item as git-norma sees it, whichever backend stored it. Field names and
// JSON tags follow bd's Issue so `--json` output matches what bd users already know.
type Task struct {
	ID                 string       `json:"id"`
	Title              string       `json:"title"`
	Description        string       `json:"description,omitempty"`
	Design             string       `json:"design,omitempty"`
	AcceptanceCriteria string       `json:"acceptance_criteria,omitempty"`
	Notes              string       `json:"notes,omitempty"`
	Status             string       `json:"status,omitempty"`
	Priority           int          `json:"priority"`
	IssueType          string       `json:"issue_type,omitempty"`
	Assignee           string       `json:"assignee,omitempty"`
	Owner              string       `json:"owner,omitempty"`
	CreatedAt          time.Time    `json:"created_at"`
	CreatedBy          string       `json:"created_by,omitempty"`
	UpdatedAt          time.Time    `json:"updated_at"`
	StartedAt          *time.Time   `json:"started_at,omitempty"`
	ClosedAt           *time.Time   `json:"closed_at,omitempty"`
	CloseReason        string       `json:"close_reason,omitempty"`
	Labels             []string     `json:"labels,omitempty"`
	Dependencies       []Dependency `json:"dependencies,omitempty"`
	// Parent is the target of the task's parent-child dependency, if any.
	Parent string `json:"parent,omitempty"`
	// LeaseExpires is when the lease of the task's claim runs out, where the tracker keeps
	// leases itself (Leaser); nil otherwise.
	LeaseExpires *time.Time `json:"lease_expires_at,omitempty"`
	// State is git-norma's own state of the task (a JSON object) where the backend keeps it
	// apart from the notes (StateKeeper); nil when it has none there.
	State json.RawMessage `json:"-"`
	// NoChildren says the backend's own record of the task shows that it has none (bd's show:
	// no task depends on it), so nobody need ask; false says nothing.
	NoChildren bool `json:"-"`
}

// NewTask is what a caller decides when adding a task; the backend fills in the id, status and
// timestamps so every backend assigns them the same way bd would.
type NewTask struct {
	Title       string
	Description string
	Design      string
	// Acceptance becomes bd's acceptance_criteria.
	Acceptance string
	// Type is a bd issue type; empty means "task".
	Type string
	// Priority is 0 (highest) to 4; PriorityUnset means bd's default, 2.
	Priority int
	// Parent makes the new task a child, with id <Parent>.<n>.
	Parent string
	Labels []string
	// Actor is recorded as created_by and owner, as bd does with --actor.
	Actor string
}

// Tracker is the part of a backlog the loop needs. It stays this small so each backend (bd
// CLI, embedded JSONL, test fakes) is cheap to write and to test on its own.
type Tracker interface {
	// Create adds a task and returns it as stored.
	Create(ctx context.Context, t NewTask) (Task, error)
	// Get returns one task; an unknown id wraps ErrNotFound.
	Get(ctx context.Context, id string) (Task, error)
	// List returns every task, closed ones included, in storage order.
	List(ctx context.Context) ([]Task, error)
	// SetStatus moves a task to status. Closing records closed_at and reason; in_progress
	// records started_at; any other status clears closed_at and close_reason.
	SetStatus(ctx context.Context, id, status, reason string) error
	// Ready returns what `bd ready` returns: open tasks not blocked by an open `blocks`
	// dependency and with no blocked or deferred ancestor — epics and features included.
	Ready(ctx context.Context) ([]Task, error)
	// Claim atomically moves an open task to in_progress (assignee = actor when given). A task
	// that is not open, or that someone else holds, wraps ErrClaimed.
	Claim(ctx context.Context, id, actor string) (Task, error)
	// Update writes notes and label changes (and a status, if set) as one change, so a step's
	// state costs one backend call.
	Update(ctx context.Context, id string, u Update) error
	// AddDependency records that issue depends on dependsOn (blocks, discovered-from, ...).
	AddDependency(ctx context.Context, issue, dependsOn, depType string) error
	// RemoveDependency removes every dependency of issue on dependsOn.
	RemoveDependency(ctx context.Context, issue, dependsOn string) error
}

// Scanner is a backlog that can hand its tasks over one by one, in storage order, stopping
// when told (the embedded one: a page of 50 tasks decodes 50 records, not 10,000).
type Scanner interface {
	Scan(ctx context.Context, fn func(Task) bool) error
}

// ChildLister is a backend that lists one task's children without reading every task: bd
// asks for them, the embedded backlog finds them in its heads.
type ChildLister interface {
	Children(ctx context.Context, id string) ([]Task, error)
}

// Children lists a task's direct children: the backend's own way where it has one, else
// from every task.
func Children(ctx context.Context, tr Tracker, id string) ([]Task, error) {
	if cl, ok := tr.(ChildLister); ok {
		return cl.Children(ctx, id)
	}
	all, err := tr.List(ctx)
	return slices.DeleteFunc(all, func(t Task) bool { return t.Parent != id }), err
}

// ForceCloser is a tracker that refuses to close a task open tasks block (bd does) and can be
// told to anyway: for a run the user forced past them.
type ForceCloser interface {
	CloseForced(ctx context.Context, id, reason string) error
}

var dependencyTypes = map[string]bool{
	"blocks": true, "parent-child": true, "related": true, "discovered-from": true,
	"conditional-blocks": true, "waits-for": true,
}

// ValidDependencyType reports whether git-norma may create a dependency of this bd type.
func ValidDependencyType(t string) bool { return dependencyTypes[t] }

// Update is a batch of changes to one task.
type Update struct {
	// Notes replaces the notes when non-nil.
	Notes *string
	// EditNotes, where the backend can (the embedded backlog, under its lock), makes the new
	// notes from the notes as they are at the write, instead of Notes: a note a person
	// appended meanwhile survives. bd writes Notes.
	EditNotes    func(current string) (string, error)
	AddLabels    []string
	RemoveLabels []string
	// Status, when set, moves the task like SetStatus (without a reason).
	Status string
	// Title, Description, Acceptance and Priority, when set, replace the task's (task edit).
	Title, Description, Acceptance *string
	Priority                       *int
	// State, when set, replaces git-norma's state of the task where a StateKeeper keeps it;
	// the notes and anything else kept there stay as they are.
	State json.RawMessage
}

// StateKeeper is a backend that keeps git-norma's state of a task apart from its notes (bd: the
// "norma" key of the task's metadata), so that git-norma never writes the notes while it works
// on a task: a note a person appends meanwhile (bd note, bd update --append-notes) cannot be
// written over. The embedded backlog keeps the state inside the notes instead, and edits them
// as they are at the moment of the write, under its lock (Update.EditNotes).
type StateKeeper interface {
	KeepsStateApart() bool
	// ClaimWithState claims like Claim and, in the same call, replaces git-norma's state of
	// the task with state: the lease of a worker that dies right after claiming runs out.
	ClaimWithState(ctx context.Context, id, actor string, state json.RawMessage) (Task, error)
}

// ErrClaimed means a claim lost: the task is not open or belongs to someone else.
var ErrClaimed = errors.New("task is already claimed")

var validStatuses = map[string]bool{
	StatusOpen: true, StatusInProgress: true, StatusBlocked: true, StatusDeferred: true,
	StatusClosed: true, "pinned": true, "hooked": true,
}

var validTypes = map[string]bool{
	"task": true, "bug": true, "feature": true, "epic": true, "chore": true,
	"decision": true, "spike": true, "story": true, "milestone": true,
}

// ValidStatus reports whether bd accepts s as a built-in status, so git-norma refuses a value
// before writing a file that `bd import` would later reject.
func ValidStatus(s string) bool { return validStatuses[s] }

// ValidType reports whether bd accepts s as a user-facing issue type. bd's internal types
// (message, molecule, gate, event) and non-bd words such as "docs" are refused.
func ValidType(s string) bool { return validTypes[s] }
