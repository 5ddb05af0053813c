package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/agent"
	"github.com/git-norma/git-norma/worktree"
)

// end records how the run ended, lands a PASS, and gives back the claim and the worktree. It
// runs even after Ctrl-C (uncancelled): half-recorded state is worse than a second's delay.
func (r *run) end(ctx context.Context, res loop.Result, noLand bool) (RunReport, error) {
	fctx := context.WithoutCancel(ctx)
	rep := r.report(res)
	if res.StopReason != loop.StopInterrupted {
		r.verdict = res.Verdict // an interrupted run does not count for or against the task
	}
	verdict := ""
	if res.Verdict != "" {
		verdict = runVerdict(res.Verdict)
	}
	if len(res.Discovered) > 0 {
		r.fileDiscoveries(fctx, res.Discovered, &rep)
	}
	// rep.Message is res.Message, unless Plan's outcome added what applying it did.
	status, stopReason, removeWorktree := store.StatusStopped, res.StopReason, true
	switch {
	case planOutcome(res):
		r.applyOutcome(fctx, res, &rep)
	case res.Status == loop.RunPassed:
		// The PASS holds for the commit and tree its Check ran on: landing refuses others.
		_ = r.st.RecordPass(fctx, r.id, res.VerifiedHead, res.VerifiedTree)
		if noLand {
			rep.Message = fmt.Sprintf("PASS, not landed (--no-land); review with: git diff %s...%s, then: git norma land %s", rep.Target, rep.Branch, rep.TaskID)
			r.finish(fctx, store.StatusPassed, verdict, "", rep.Message, store.Event{Type: "land_skipped", Message: "--no-land"})
			r.release(fctx, true)
			return rep, nil
		}
		r.finish(fctx, store.StatusPassed, verdict, "", rep.Message)
		r.app.crash.reach("passed")
		return r.landAndClose(fctx, rep)
	case res.StopReason == loop.StopInterrupted:
		rep.ExitCode, removeWorktree = ExitInterrupted, false
	case res.Status == loop.RunFailed && agentCannotRun(res.Err):
		// Not the task's failure: every task's run would end alike until the agent's setup
		// is fixed, so a job or worker must not pass it off as work that failed (exit 1).
		rep.ExitCode, status, stopReason = ExitFatal, store.StatusFailed, ""
	case res.Status == loop.RunFailed:
		rep.ExitCode, status, stopReason = ExitFail, store.StatusFailed, ""
	default:
		rep.ExitCode = ExitStopped
	}
	r.finish(fctx, status, verdict, stopReason, rep.Message)
	r.release(fctx, removeWorktree)
	rep.Blocked = r.blocked
	return rep, nil
}

// agentCannotRun says a step's agent could not run here at all: its credentials, its setup,
// its command (after the engine's retries).
func agentCannotRun(err error) bool {
	var pe *loop.ProtocolError
	return errors.As(err, &pe) && slices.Contains([]string{agent.ErrKindAuth, agent.ErrKindRefused, loop.ErrKindStart}, pe.Kind)
}

// planOutcome says Plan ended the run by decomposing or blocking the task.
func planOutcome(res loop.Result) bool {
	return res.Plan != nil && res.Status == loop.RunStopped &&
		(res.StopReason == loop.StopDecomposed && res.Plan.Outcome == loop.OutcomeDecompose ||
			res.StopReason == loop.StopDependencyBlocked && res.Plan.Outcome == loop.OutcomeBlocked)
}

// applyOutcome creates what Plan asked for and says which task to go on with. A failure
// midway leaves events saying what was created; the next attempt reuses it.
func (r *run) applyOutcome(ctx context.Context, res loop.Result, rep *RunReport) {
	rep.ExitCode = ExitStopped
	ap, err := r.app.newApplier(ctx, r.st, r.id)
	var out outcome
	if err == nil {
		if res.Plan.Outcome == loop.OutcomeDecompose {
			out, err = ap.decompose(ctx, r.pre.task, res.Plan)
		} else {
			out, err = ap.blocked(ctx, r.pre.task, res.Plan)
		}
	}
	rep.Created = out.created
	rep.Proposed = append(rep.Proposed, out.proposed...)
	switch {
	case err != nil:
		rep.ExitCode = ExitFail
		rep.Message = fmt.Sprintf("%s; applying it failed after creating %v: %v", res.Message, out.created, err)
	case out.next == "":
		rep.Message = fmt.Sprintf("%s; created %v; %s", res.Message, out.created, out.why)
	default:
		rep.continueWith = out.next
		rep.Message = fmt.Sprintf("%s; created %v; going on with %s", res.Message, out.created, out.next)
	}
}

// fileDiscoveries files the work Do found; failures are recorded, never fatal.
func (r *run) fileDiscoveries(ctx context.Context, found []loop.Discovery, rep *RunReport) {
	ap, err := r.app.newApplier(ctx, r.st, r.id)
	var out outcome
	if err == nil {
		out, err = ap.discoveries(ctx, r.pre.task, found)
	}
	rep.Discovered = out.created
	rep.Proposed = append(rep.Proposed, out.proposed...)
	if err != nil {
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "discovery_failed", Message: err.Error()})
	}
}

// landAndClose lands the PASSed branch and closes the task; a refusal is exit 3 with the
// branch left for review.
func (r *run) landAndClose(ctx context.Context, rep RunReport) (RunReport, error) {
	r.removeWorktree(ctx)
	commit, err := r.app.lander().land(ctx, r.st, landRequest{runID: r.id, task: r.pre.task, target: rep.Target, claimedByUs: r.claimed, forced: r.forced, checkedHere: true,
		leaseLost: r.leaseLost != nil && r.leaseLost.Load() != nil, stepNotes: r.rec.notes, live: r.live})
	r.closedByLanding = err == nil
	var le *landRefusal
	if errors.As(err, &le) {
		// The head the landing checked (each attempt checks the branch merged with the
		// remote's target, and leaves it there), not the branch's now: a commit on it since is
		// no work of Do's.
		r.mirror.resumeAt = le.resumeAt
	}
	r.release(ctx, false)
	if err != nil {
		if le != nil {
			rep.ExitCode, rep.LandError, rep.LandPaths, rep.LandHint = ExitLandRefused, le.Error(), le.paths, le.hint
			rep.Message = "PASS, but landing was refused: " + le.Error()
			return rep, nil
		}
		rep.Landed, rep.Message = commit, err.Error() // landed, and then closing it failed
		return rep, err
	}
	rep.Landed = commit
	if commit == "" {
		rep.Message = "PASS; the task branch adds nothing to " + rep.Target + ", nothing to land"
	} else {
		rep.Message = fmt.Sprintf("PASS; landed as %.10s on %s", commit, rep.Target)
	}
	return rep, nil
}

// release hands back the task claim (when the task is not closed) and removes the worktree,
// whose work is committed on the task branch. An interrupted run keeps its worktree.
func (r *run) release(ctx context.Context, removeWorktree bool) {
	if removeWorktree {
		r.removeWorktree(ctx)
	}
	if !r.claimed {
		return
	}
	r.claimed = false
	// Given back below, unless the tracker could not be read or written (a backlog left with
	// conflict markers, bd down): the claim stays on record, and the next loop or run of the
	// task finishes the run from it (recoverTask), landing a PASS or reopening the task.
	held := false
	defer func() {
		if !held {
			_ = r.st.SetClaim(ctx, r.id, store.ClaimReleased)
		}
	}()
	if r.stopLease != nil {
		r.stopLease() // the last write below clears the lease
	}
	status := tracker.StatusOpen
	if r.closedByLanding {
		status = "" // closed by the landing: no need to ask
	} else if t, err := r.tr.Get(ctx, r.pre.task.ID); err != nil || t.Status != tracker.StatusInProgress {
		held = err != nil
		status = "" // moved by someone else: leave the status alone
	} else if holder, _ := r.app.lander().otherHolder(ctx, r.st, r.id, t); holder != "" {
		// Another worker claimed it after this run's lease ran out: not ours to touch.
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "claim_lost",
			Message: fmt.Sprintf("task %s is claimed by %s now: not handed back, and this run's state not written over theirs", r.pre.task.ID, holder)})
		return
	}
	r.mirror.closedByLanding = r.closedByLanding
	blocked, err := r.mirror.finishRun(ctx, r.verdict, status)
	if err != nil {
		held = held || status != ""
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "mirror_failed", Message: "task notes: " + err.Error()})
	}
	if blocked != "" {
		r.blocked = blocked
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "task_blocked", Message: "task " + r.pre.task.ID + " blocked: " + blocked})
	}
}

// removeWorktree frees the task branch (landing may delete it) once its work is committed.
func (r *run) removeWorktree(ctx context.Context) {
	if r.ws != nil {
		r.removeRunWorktree(ctx, r.ws.Dir(), r.id, r.pre.task.ID, "a process of the run")
		r.ws = nil
	}
}

// removeRunWorktree removes run runID's worktree at path under the worktree lock, or records
// that it is kept.
func (r *run) removeRunWorktree(ctx context.Context, path, runID, taskID, who string) {
	err := r.app.Repo.withWorktreeLock(ctx, func() error { return r.removeLocked(ctx, path, runID, taskID, who) })
	if err != nil {
		_ = r.st.AppendEvent(ctx, runID, store.Event{TS: r.app.Now(), Type: "worktree_kept", Message: err.Error()})
	}
}

// removeLocked removes run runID's worktree at path, recording a stale git lock who left in
// it. The caller holds the worktree lock.
func (r *run) removeLocked(ctx context.Context, path, runID, taskID, who string) error {
	staleLock, err := r.wm.Remove(ctx, path, runID, taskID)
	if staleLock != "" {
		_ = r.st.AppendEvent(ctx, runID, staleLockEvent(r.app.Now(), staleLock, who))
	}
	return err
}

// finish marks the run's final status in the store.
func (r *run) finish(ctx context.Context, status, verdict, stopReason, message string, events ...store.Event) {
	now := r.app.Now()
	events = append(events, store.Event{TS: now, Type: "run_finished", Message: status + ": " + message,
		Data: map[string]any{"status": status, "verdict": verdict, "stop_reason": stopReason}})
	_ = r.st.FinishRun(ctx, r.id, status, verdict, stopReason, now, events...)
}

// abort marks the run failed after an orchestrator failure (store, disk), keeping the worktree.
func (r *run) abort(err error) error {
	ctx := context.Background()
	r.finish(ctx, store.StatusFailed, "", "", "orchestrator error: "+err.Error())
	r.release(ctx, false)
	if diskFull(err) {
		return &Error{Err: err, Hint: fmt.Sprintf("free space on the disk holding %s, then run it again: git norma run %s (the task branch keeps what was committed)",
			r.app.Repo.Root, r.pre.task.ID)}
	}
	return err
}

// diskFull recognises a full disk however it surfaced: from the OS, or from SQLite.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "database or disk is full")
}

func (r *run) report(res loop.Result) RunReport {
	return RunReport{
		RunID: r.id, TaskID: r.pre.task.ID, Title: r.pre.task.Title, Status: res.Status,
		Verdict: res.Verdict, StopReason: res.StopReason, Message: res.Message,
		Iterations: res.Iterations, Steps: res.LastStep,
		Branch: worktree.TaskBranch(r.pre.task.ID), Target: r.pre.target, RunDir: r.dir,
		DurationMS: r.app.Now().Sub(r.started).Milliseconds(),
		Failure:    r.app.redact.Failure(res.Failure),
	}
}
