package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// recorder is the loop's commit point — one store transaction per step — followed by the
// git-notes mirror, whose failure is recorded but never fails the run.
type recorder struct {
	st      *store.Store
	root    string
	runID   string
	taskID  string
	journal notes.Journal
	mirror  *taskMirror
	redact  redact.Redactor
	crash   *crashpoints
	// notes are the run's journal entries by the commit they go on, in the order the run
	// reached them, written in one commit of the notes ref when the run ends (writeNotes) or
	// with the landing's note. A run that dies first loses none: reconcile replays its steps.
	notes []notes.Note
	// lastHead is the head the previous step ended on.
	lastHead string
	// push, landing through a remote, sends each new step commit there (run.pushStep).
	push func(ctx context.Context, commit string)
}

// The kv_run keys where runs recorded before schema 4 kept their last plan and last check
// outputs: what a landing reads (its criteria, its commit message, its verdict), never the
// step files, which agents can write. Steps now keep their whole output in the store.
const (
	kvLastPlan  = "last_plan"
	kvLastCheck = "last_check"
)

// CommitStep implements loop.Recorder.
func (r *recorder) CommitStep(ctx context.Context, rec loop.StepRecord) error {
	events := []store.Event{{
		TS: rec.EndedAt, Type: "step_committed",
		Message: fmt.Sprintf("%s %s: %s", loop.StepDirName(rec.Index, rec.Role), rec.Output.Status, rec.Summary),
		Data: map[string]any{"status": rec.Output.Status, "stop_reason": rec.Output.StopReason, "commit": rec.Commit,
			"head": rec.Head, "usage": rec.Output.Usage},
	}}
	for _, e := range rec.Events {
		events = append(events, store.Event{TS: rec.EndedAt, Type: e.Type, Message: e.Message, Data: e.Data})
	}
	verdict := ""
	if rec.Role == loop.RoleCheck && rec.Output.Check != nil {
		verdict = runVerdict(rec.Output.Check.Verdict.Status)
	}
	output, err := json.Marshal(rec.Output)
	if err != nil {
		return err
	}
	step := store.Step{
		RunID: rec.RunID, Index: rec.Index, Role: string(rec.Role), Iteration: rec.Iteration,
		Status: rec.Status, Dir: r.rel(rec.Dir), StartedAt: rec.StartedAt, EndedAt: rec.EndedAt, Summary: rec.Summary,
		Output: string(output),
	}
	r.crash.reach("step-files")
	err = r.st.CommitStep(ctx, store.StepCommit{
		Step: step, Events: events, Iteration: rec.Iteration, CurrentStepIndex: rec.Index, Verdict: verdict,
	})
	if err != nil {
		return err
	}
	if rec.Head == "" {
		return nil
	}
	r.crash.reach("step-committed")
	if r.push != nil && rec.Commit != "" && rec.Commit != r.lastHead {
		r.push(ctx, rec.Commit)
	}
	r.lastHead = rec.Head
	if len(r.notes) == 0 || r.notes[len(r.notes)-1].Commit != rec.Head {
		r.notes = append(r.notes, notes.Note{Commit: rec.Head})
	}
	last := &r.notes[len(r.notes)-1]
	last.Entries = append(last.Entries, stepEntry(r.taskID, step, r.redact))
	if r.mirror != nil {
		// The store, the commit point, has the step: a mirror that could not be written is
		// recorded, and the run goes on.
		r.mirror.afterStep(ctx, rec, func(err error) {
			_ = r.st.AppendEvent(ctx, rec.RunID, store.Event{TS: rec.EndedAt, Type: "mirror_failed", Message: "task notes: " + err.Error()})
		})
	}
	return nil
}

// writeNotes writes the run's journal into the notes of the commits it worked on, in one
// commit of the notes ref.
func (r *recorder) writeNotes(ctx context.Context) {
	if err := r.journal.AddAll(ctx, r.notes); err != nil {
		_ = r.st.AppendEvent(ctx, r.runID, store.Event{TS: time.Now(), Type: "mirror_failed", Message: "git notes: " + err.Error()})
	}
	r.notes = nil
}

// stepEntry is a step's journal line, derived from its store row only, so the line written
// after the step and the one replayed at landing (or by a repair) are identical.
func stepEntry(taskID string, s store.Step, redact redact.Redactor) notes.Entry {
	return notes.Entry{TS: notes.Stamp(s.EndedAt), Kind: notes.KindStep, Task: taskID, Run: s.RunID,
		Step: s.Index, Iteration: s.Iteration, Role: s.Role, Status: s.Status, Summary: redact.Apply(s.Summary)}
}

// rel stores paths relative to the repository root, so the db survives moving the repo.
func (r *recorder) rel(path string) string {
	if rel, err := filepath.Rel(r.root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// runVerdict maps a Check verdict onto the runs table's PASS|FAIL (PARTIAL is not a PASS).
func runVerdict(v string) string {
	if v == loop.VerdictPass {
		return "PASS"
	}
	return "FAIL"
}

// workspace adapts a worktree to the loop's Workspace, turning agent faults into protocol
// errors the loop records against the step.
type workspace struct {
	ws     *worktree.Workspace
	redact redact.Redactor
	// root and runDir locate the places no agent may write (see guarded), with the fallback
	// guard's (nil in tests of the run dir and backlog alone).
	root, runDir string
	guard        *guard.Guard
	// confined says every process a step starts runs under Landlock, which keeps it from
	// writing any of the places the fingerprint and the guard watch (see guarded).
	confined bool
	// events records an event of the run, stamped with the run's clock (see clearStaleLock).
	events func(context.Context, store.Event)
	// checks brings the task's check worktree to a commit (checker.checkTree).
	checks func(ctx context.Context, commit string, fresh bool) (loop.CheckTree, error)
}

func (w workspace) Dir() string { return w.ws.Dir() }

func (w workspace) CheckTree(ctx context.Context, commit string, fresh bool) (loop.CheckTree, error) {
	return w.checks(ctx, commit, fresh)
}

// Head is the workspace's HEAD, with nothing of the outside places snapshotted (see
// loop.headReader).
func (w workspace) Head(ctx context.Context) (string, error) { return w.ws.Head(ctx) }

func (w workspace) Snapshot(ctx context.Context, writing bool) (loop.Snapshot, error) {
	var s worktree.State
	var err error
	if writing {
		s.Head, err = w.ws.Head(ctx)
	} else {
		s, err = w.ws.State(ctx)
	}
	if err != nil {
		return loop.Snapshot{}, err
	}
	if w.confined {
		return loop.Snapshot{Head: s.Head, Status: s.Status}, nil
	}
	snap, err := w.snapshotOutside(ctx)
	snap.Head, snap.Status = s.Head, s.Status
	return snap, err
}

// snapshotOutside is the state, before unconfined processes run, of what they may not write
// (OutsideChanges compares it after). Until the guard has looked, a process killed meanwhile
// (by an agent, to escape the guard) leaves a mark, in the run dir and in the store, for the
// next run (reconcileOne, recordEndedUnguarded): what they wrote went unchecked.
func (w workspace) snapshotOutside(ctx context.Context) (loop.Snapshot, error) {
	w.linkBacklog()
	// Made before the fingerprint, which sees it both times; an agent must erase both.
	if err := os.WriteFile(filepath.Join(w.runDir, guardPendingFile), nil, 0o600); err != nil {
		return loop.Snapshot{}, err
	}
	markPending(ctx, w.guard, true)
	snap := loop.Snapshot{Outside: w.fingerprint()}
	if w.guard.Active() {
		var err error
		if snap.Guard, err = w.guard.Snapshot(ctx); err != nil {
			// Nothing ran yet: no look is owed.
			_ = os.Remove(filepath.Join(w.runDir, guardPendingFile))
			markPending(ctx, w.guard, false)
			return loop.Snapshot{}, fmt.Errorf("snapshot the guarded places: %w", err)
		}
	}
	return snap, nil
}

func (w workspace) Changes(ctx context.Context, snap loop.Snapshot) ([]string, error) {
	if err := w.intact(); err != nil {
		return nil, err
	}
	return w.ws.Changes(ctx, worktree.State{Head: snap.Head, Status: snap.Status})
}

// intact turns a workspace an agent deleted (or whose .git file it removed) into a protocol
// error recorded against the step, instead of a git failure of the orchestrator.
func (w workspace) intact() error {
	for _, p := range []string{w.ws.Dir(), filepath.Join(w.ws.Dir(), ".git")} {
		if _, err := os.Stat(p); err != nil {
			return &loop.ProtocolError{Kind: loop.ErrKindWorkspace,
				Msg: fmt.Sprintf("the agent deleted %s; the task branch keeps everything committed before this step", p)}
		}
	}
	return nil
}

func (w workspace) Discard(ctx context.Context, snap loop.Snapshot) error {
	if err := w.clearStaleLock(ctx); err != nil {
		return err
	}
	return w.ws.Discard(ctx, worktree.State{Head: snap.Head, Status: snap.Status})
}

func (w workspace) Rollback(ctx context.Context, to string) (string, error) {
	if err := w.clearStaleLock(ctx); err != nil {
		return "", err
	}
	return w.ws.Rollback(ctx, to)
}

func (w workspace) Commit(ctx context.Context, snap loop.Snapshot, req loop.CommitRequest) (loop.CommitResult, error) {
	if err := w.intact(); err != nil {
		return loop.CommitResult{}, err
	}
	if err := w.clearStaleLock(ctx); err != nil {
		return loop.CommitResult{}, err
	}
	res, err := w.ws.Commit(ctx, worktree.State{Head: snap.Head, Status: snap.Status}, worktree.StepCommit{
		Role: string(req.Role), StepIndex: req.StepIndex, Iteration: req.Iteration, Summary: w.redact.Apply(req.Summary),
		// Do is the step that changes the workspace; a CLI Act agent rarely does.
		ExpectChanges: req.Role == loop.RoleDo,
	})
	if errors.Is(err, worktree.ErrBranchSwitched) || errors.Is(err, worktree.ErrHistoryRewritten) || errors.Is(err, worktree.ErrLinkChanged) ||
		errors.Is(err, worktree.ErrControlFiles) || errors.Is(err, worktree.ErrUnaddable) {
		return loop.CommitResult{}, &loop.ProtocolError{Kind: loop.ErrKindWorkspace, Msg: err.Error()}
	}
	return loop.CommitResult(res), err
}
