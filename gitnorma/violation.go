package gitnorma

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// violationEvent is the event type of a guard violation: an agent of the run wrote where no
// agent may. The violation stays pending — run and loop refuse to start — until the user has
// seen it and cleared it with git norma resume (or starts a run with --force).
const violationEvent = "guard_violation"

// guardViolation is a violation as its event's data, status and resume show it.
type guardViolation struct {
	TaskID string    `json:"task_id"`
	Paths  []string  `json:"paths"`
	At     time.Time `json:"at"`
}

// Violation is a guard violation the user has not cleared yet.
type Violation struct {
	RunID string `json:"run_id"`
	guardViolation
}

// Summary is the violation in one line: the run, its task, and each path with its fate.
func (v Violation) Summary() string {
	return fmt.Sprintf("run %s (task %s): %s", v.RunID, v.TaskID, strings.Join(v.Paths, ", "))
}

// recordViolation stores a violation of g's run, with an event on its timeline.
func recordViolation(ctx context.Context, g *guard.Guard, paths []string) {
	if g == nil || g.Store == nil {
		return
	}
	v := guardViolation{TaskID: g.TaskID, Paths: paths, At: g.Now()}
	_ = g.Store.RecordViolation(ctx, store.Violation{RunID: g.RunID, TaskID: v.TaskID, Paths: paths, At: v.At})
	_ = g.Store.AppendEvent(ctx, g.RunID, store.Event{TS: v.At, Type: violationEvent,
		Message: "an agent wrote outside the places it may write: " + strings.Join(paths, ", "), Data: v})
}

// withStore runs fn on the run store. A repository without a store has no violation on
// record, and none is created for it.
func (r *Repo) withStore(ctx context.Context, fn func(*store.Store) error) error {
	if _, err := os.Stat(r.Path("norma.db")); err != nil {
		return nil
	}
	st, err := r.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// pendingViolations lists the guard violations not cleared yet, oldest first.
func pendingViolations(ctx context.Context, st *store.Store) ([]Violation, error) {
	all, err := st.PendingViolations(ctx)
	if err != nil {
		return nil, err
	}
	var out []Violation
	for _, v := range all {
		out = append(out, Violation{RunID: v.RunID, guardViolation: guardViolation{TaskID: v.TaskID, Paths: v.Paths, At: v.At}})
	}
	return out, nil
}

// refuseViolated is the refusal of run and loop while a violation is pending.
func refuseViolated(ctx context.Context, st *store.Store) error {
	pending, err := pendingViolations(ctx, st)
	if err != nil || len(pending) == 0 {
		return err
	}
	var summaries []string
	for _, v := range pending {
		summaries = append(summaries, v.Summary())
	}
	return &Error{Kind: ErrStopped, Err: fmt.Errorf("a guard violation is pending: %s", strings.Join(summaries, "; ")),
		Hint: "look at what the agent did (git norma status <run>), then clear it: git norma resume; or start anyway: --force"}
}

// ClearViolations marks every pending violation seen by the user now (git norma resume).
func (r *Repo) ClearViolations(ctx context.Context, now time.Time) ([]Violation, error) {
	var cleared []Violation
	err := r.withStore(ctx, func(st *store.Store) error {
		pending, err := pendingViolations(ctx, st)
		if err != nil {
			return err
		}
		for _, v := range pending {
			if err := st.ClearViolation(ctx, v.RunID, now); err != nil {
				return err
			}
			_ = st.AppendEvent(ctx, v.RunID, store.Event{TS: now, Type: "guard_violation_cleared", Message: "cleared by git norma resume"})
			cleared = append(cleared, v)
		}
		return nil
	})
	return cleared, err
}

// haltReason is why the run must stop before its next step ("" for none): a pause, a
// violation another run recorded since this one started (an older one was cleared or
// --forced), or its claim lost to another worker (its work would not land: see land.go).
func (r *run) haltReason() (reason, why string) {
	if why := r.app.Repo.PauseReason(); why != "" {
		return loop.StopPaused, why + resumeHint
	}
	if v := violationSince(context.Background(), r.st, r.started, r.id); v != "" {
		return loop.StopPaused, "a " + v
	}
	if r.leaseLost == nil {
		return "", ""
	}
	if lost := r.leaseLost.Load(); lost != nil {
		return StopLeaseLost, fmt.Sprintf("the claim of task %s is no longer this run's (%s): its work would not land; it stays on %s",
			r.pre.task.ID, *lost, worktree.TaskBranch(r.pre.task.ID))
	}
	return "", ""
}

// newGuard is the run's fallback guard.
func (r *run) newGuard() *guard.Guard {
	return &guard.Guard{Places: r.app.Repo.guarded(), Now: r.app.Now, Store: r.st, RunID: r.id, TaskID: r.pre.task.ID, Target: r.pre.target,
		JSONLBacklog: r.app.TrackerKind() == "jsonl", Confined: func() bool { return r.app.confiner().shields(r.pre.sandbox) },
		LiveTasks: r.app.Repo.liveTasks, KeepDir: r.dir}
}

// guarded are the repository's places the fallback guard watches.
func (r *Repo) guarded() guard.Places {
	return guard.Places{Root: r.Root, GitDir: r.GitDir, NormaDir: r.NormaDir(), Git: r.Git}
}

// violationSince summarises a violation recorded since t by a run other than except ("" when
// there is none).
func violationSince(ctx context.Context, st *store.Store, t time.Time, except string) string {
	pending, _ := pendingViolations(ctx, st) // nil on error
	for _, v := range pending {
		if v.RunID != except && !v.At.Before(t) {
			return "guard violation: " + v.Summary()
		}
	}
	return ""
}

// doctorViolations reports each pending violation.
func doctorViolations(ctx context.Context, st *store.Store, rep *DoctorReport) {
	pending, err := pendingViolations(ctx, st)
	if err != nil {
		return
	}
	for _, v := range pending {
		rep.add("guard", "warn", "violation pending: "+v.Summary(),
			"look at what the agent did (git norma status "+v.RunID+"), then: git norma resume")
	}
}

// guardPendingFile, in a run's directory, says an unconfined agent's step has not been looked
// after by the guard yet. Found in the directory of a dead run, it means that agent may have
// killed git-norma to escape the guard.
const guardPendingFile = "guard-pending"

// recordUnguarded records a guard violation for a dead run whose process died while an
// unconfined agent ran: what that agent wrote outside its places was neither checked nor
// undone, so no run starts until the user has looked (git norma resume).
func (r *run) recordUnguarded(ctx context.Context, dead store.Run) {
	mark := filepath.Join(r.app.Repo.Root, filepath.FromSlash(dead.RunDir), guardPendingFile)
	// The row is read again: the list it came from was read before the run was known dead,
	// and the run may have marked a step pending after it.
	if _, err := os.Stat(mark); err != nil {
		if now, err := r.st.Run(ctx, dead.ID); err != nil || !now.GuardPending {
			return
		}
	}
	r.app.Repo.recordUnlooked(ctx, r.st, r.app.Now, dead, "the run's process died while its unconfined agent ran")
}

// recordEndedUnguarded records a guard violation for each ended run still marked as awaiting
// the guard, once no process holds the run's task: its landing (or a parent's Verify run after
// it, or a git norma check) died while the checks it ran unconfined awaited the guard
// (guardedChecks), or a step ended without the guard's look.
func (r *Repo) recordEndedUnguarded(ctx context.Context, st *store.Store, now func() time.Time) {
	runs, err := st.EndedRunsGuardPending(ctx)
	if err != nil || len(runs) == 0 {
		return
	}
	live := r.liveTasks()
	for _, run := range runs {
		if !live[run.TaskID] { // else its landing may be under way
			r.recordUnlooked(ctx, st, now, run, "the guard never looked after the run's unconfined processes (the checks of its landing, or a step's): its process died, or the step ended before")
		}
	}
}

// recordUnlooked records run's violation: what its unconfined processes changed outside their
// worktree was neither checked nor undone (why says how that came about), so no run starts
// until the user has looked (git norma resume). The marks that said the guard owed a look go.
func (r *Repo) recordUnlooked(ctx context.Context, st *store.Store, now func() time.Time, run store.Run, why string) {
	g := &guard.Guard{Places: r.guarded(), Now: now, Store: st, RunID: run.ID, TaskID: run.TaskID}
	recordViolation(ctx, g, []string{why + ", so what they changed outside their worktree (the repository's config, hooks and refs, your checkout, the backlog) was neither checked nor undone: look at them"})
	dir := filepath.Join(r.Root, filepath.FromSlash(run.RunDir))
	for _, mark := range []string{filepath.Join(dir, guardPendingFile), filepath.Join(dir, "guard", guardPendingFile)} { // a check's is under guard/
		_ = os.Remove(mark)
	}
	markPending(ctx, g, false)
}

// markPending records in the store (guardPendingFile's copy there) whether an unconfined
// agent's step awaits the guard.
func markPending(ctx context.Context, g *guard.Guard, pending bool) {
	if g != nil && g.Store != nil {
		_ = g.Store.SetGuardPending(context.WithoutCancel(ctx), g.RunID, pending)
	}
}
