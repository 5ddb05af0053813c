package loop

import (
	"context"
	"time"
)

// Workspace is the run's git worktree as the engine sees it. The application implements it
// with real git; the engine only asks for snapshots and orchestrator commits.
type Workspace interface {
	// Dir is the worktree's absolute path, where agents run.
	Dir() string
	// CheckTree brings the task's check worktree to exactly commit and says where it is and
	// which tree it holds: the check commands run there, never in Dir, so nothing an agent
	// wrote without committing (an ignored file, a nested repository) decides a verdict.
	// fresh makes it anew (and sets it up again) instead of moving it, without what earlier
	// checks left there.
	CheckTree(ctx context.Context, commit string, fresh bool) (CheckTree, error)
	// Snapshot records the workspace state before a step. For a writing step (one whose
	// changes are committed, not compared) only HEAD and the outside places are needed.
	Snapshot(ctx context.Context, writing bool) (Snapshot, error)
	// Changes lists what differs from the snapshot (paths, or a note that HEAD moved).
	Changes(ctx context.Context, snap Snapshot) ([]string, error)
	// Discard returns the workspace to the snapshot's committed state.
	Discard(ctx context.Context, snap Snapshot) error
	// Commit records, as the orchestrator, what a writing role changed since the snapshot.
	// Agent faults (history rewritten, branch switched) are returned as *ProtocolError.
	Commit(ctx context.Context, snap Snapshot, req CommitRequest) (CommitResult, error)
	// Rollback moves the task branch back to commit to, keeping what it drops reachable under
	// a ref it returns ("" when there was nothing to drop).
	Rollback(ctx context.Context, to string) (string, error)
	// OutsideChanges lists what changed since the snapshot in the places no agent may write,
	// each with what became of it (restored or not). Any makes the step a guard violation.
	OutsideChanges(ctx context.Context, snap Snapshot) ([]string, error)
}

// headReader is a Workspace that tells its HEAD alone: what a step that runs none of an agent's
// code (a built-in Plan or Act) needs first, without a Snapshot, whose fallback guard would
// owe a look no OutsideChanges gives.
type headReader interface {
	Head(ctx context.Context) (string, error)
}

// CheckTree is a checkout of exactly one commit, where the check commands run.
type CheckTree struct {
	Dir string
	// Tree is the commit's tree id, recorded with the evidence.
	Tree string
	// Leftovers says files earlier check or setup commands made (ignored caches) are there.
	Leftovers bool
	// Checkout compares the tree with the commit and puts it back (Checks.Checkout).
	Checkout Checkout
}

// Snapshot is a workspace state: its HEAD commit and a fingerprint of its uncommitted state.
type Snapshot struct {
	Head   string
	Status string
	// Outside fingerprints the places no agent may write (the backlog, the config, the run
	// dir outside the workspace, artifacts and steps).
	Outside string
	// Guard is the application's own copy of what it can restore after a violation.
	Guard any
}

// CommitRequest describes the step whose changes are being committed.
type CommitRequest struct {
	Role      Role
	StepIndex int
	Iteration int
	Summary   string
}

// CommitResult is what the orchestrator commit produced.
type CommitResult struct {
	Commit  string
	Changed bool
	// PatchBytes is the size of the task branch's whole diff against its base.
	PatchBytes int64
	// AgentCommits is how many commits the agent made itself (folded into ours).
	AgentCommits int
}

// Recorder is the commit point of a step (spec 4.1): by the time it returns, the step's row,
// events and run cursor are durable. Mirrors that follow it must be idempotent.
type Recorder interface {
	CommitStep(ctx context.Context, rec StepRecord) error
}

// StepRecord is one finished step.
type StepRecord struct {
	RunID     string
	Index     int
	Role      Role
	Iteration int
	// Status is ok, fail or skipped (the store's step statuses).
	Status    string
	Dir       string
	StartedAt time.Time
	EndedAt   time.Time
	Summary   string
	Output    Output
	// Commit is the orchestrator commit made after a writing step, if any.
	Commit string
	// Head is the commit the workspace was on when the step ended: the step's own commit, or
	// the one a read-only step looked at. Journal notes attach there.
	Head   string
	Events []Event
	// Builtin says the step's agent is a built-in one (Plan, Act) that runs in-process and
	// decides from its input alone: run again on a resume, it decides the same, so its outcome
	// need not be saved on its own.
	Builtin bool
}

// Event is a timeline entry recorded with a step.
type Event struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}
