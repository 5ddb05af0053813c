package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// Recovery of what a run killed after it was marked finished leaves (reconcile.go repairs runs
// that died while marked running): a claim the store and tracker disagree on, a PASS recorded
// and not landed, a landing re-check's scratch workspace.

// claimedBy reports whether run holds t's claim: t is in progress and the run recorded its
// claim and never gave it back, or recorded its intent to claim (made before the tracker
// claim) and died before recording the claim. In that second case the claim is ours only when
// its assignee is the one our claim leaves: recovery never releases a person's claim. With
// bd, so it is in the first: the dead run's lease may have run out, and another worker
// claimed the task since (reaper.go).
func (a *App) claimedBy(ctx context.Context, run store.Run, t tracker.Task) bool {
	if t.Status != tracker.StatusInProgress {
		return false
	}
	want := a.lander().claimAssignee(ctx, run)
	switch run.Claim {
	case store.ClaimHeld:
		return want == "" || t.Assignee == want
	case store.ClaimIntent:
		return t.Assignee == want
	}
	return false
}

// claimAssignee is the assignee run's claim leaves on a task: none with the embedded backlog;
// with bd, the actor the run recorded (worker.id), or for a run that recorded none bd's
// default: BEADS_ACTOR, or else git's user.name.
func (ld *lander) claimAssignee(ctx context.Context, run store.Run) string {
	switch {
	case ld.kind() != "beads":
		return ""
	case run.Actor != "":
		return run.Actor
	case os.Getenv("BEADS_ACTOR") != "":
		return os.Getenv("BEADS_ACTOR")
	}
	return ld.repo.actor(ctx)
}

// recoverPassed finishes a run of the task that recorded a PASS and died before landing it
// (it still holds the claim): it lands the PASS, or reopens the task (recover_passed
// "reopen", --no-land, a refused landing). It returns the report of a landing, nil when the
// run is to go on, and removes re-check workspaces killed landings left. The caller holds the
// task's lock.
func (r *run) recoverPassed(ctx context.Context, noLand bool) (*RunReport, error) {
	runs, err := r.st.RunsForTask(ctx, r.pre.task.ID, 5)
	if err != nil {
		return nil, err
	}
	for _, dead := range runs {
		r.clearRecheck(ctx, dead)
	}
	// A run reaches PASS only after recording its claim: one indexed query finds them.
	held, err := r.st.RunsWithClaim(ctx, store.ClaimHeld)
	if err != nil {
		return nil, err
	}
	for _, dead := range held {
		if dead.TaskID != r.pre.task.ID || dead.Status != store.StatusPassed {
			continue
		}
		r.reconciledOwn = true // what follows may hand the task back: read it again after
		t, err := r.tr.Get(ctx, r.pre.task.ID)
		if err != nil {
			return nil, err
		}
		if r.app.claimedBy(ctx, dead, t) {
			return r.recoverPass(ctx, dead, t, noLand)
		}
	}
	return nil, nil
}

// recoverPass finishes one passed run that did not land; see recoverPassed.
func (r *run) recoverPass(ctx context.Context, dead store.Run, t tracker.Task, noLand bool) (*RunReport, error) {
	passHead, landed := dead.PassHead, dead.LandedCommit
	r.removeDeadWorktree(ctx, dead) // what landAndClose does first: the work is on the branch
	if landed == "" {
		// A run killed right after landing did not record it.
		landed = r.app.Repo.landingOfRun(ctx, r.pre.target, dead.TaskID, dead.ID, passHead)
	}
	rep := &RunReport{RunID: dead.ID, TaskID: t.ID, Title: t.Title, Status: loop.RunPassed, Verdict: loop.VerdictPass,
		Iterations: dead.Iteration, Steps: dead.CurrentStepIndex, Branch: worktree.TaskBranch(t.ID), Target: r.pre.target,
		RunDir: filepath.Join(r.app.Repo.Root, filepath.FromSlash(dead.RunDir))}
	var done, resumeAt string
	switch why := r.reopenReason(ctx, dead.ID, noLand); {
	case landed != "":
		// It landed and died before recording it: record it and close the task, never land again.
		if err := r.app.recordLanding(ctx, r.st, landRequest{runID: dead.ID, task: t, target: r.pre.target}, landed); err != nil {
			return nil, err
		}
		rep.Landed, done = landed, fmt.Sprintf("already landed as %.10s on %s; task closed", landed, r.pre.target)
	case passHead == "" || why != "":
		if err := r.tr.SetStatus(ctx, t.ID, tracker.StatusOpen, ""); err != nil {
			return nil, fmt.Errorf("reopen task %s: %w", t.ID, err)
		}
		rep, done = nil, "reopened ("+cmp.Or(why, "it recorded no verified commit")+")"
	default:
		commit, err := r.app.lander().land(ctx, r.st, landRequest{runID: dead.ID, task: t, target: r.pre.target, claimedByUs: true, live: r.live})
		var refused *landRefusal
		switch {
		case errors.As(err, &refused):
			// Refused by the remote alone, the verified work stays good: releaseDeadClaim hands
			// the task back with it to resume, as a run's own refused landing does.
			if resumeAt = refused.resumeAt; resumeAt == "" {
				if err := r.tr.SetStatus(ctx, t.ID, tracker.StatusOpen, ""); err != nil {
					return nil, fmt.Errorf("reopen task %s: %w", t.ID, err)
				}
			}
			rep, done = nil, "its landing was refused ("+refused.Error()+"); reopened"
		case err != nil:
			return nil, err // the claim stays recorded: the next run or loop tries again
		case commit == "":
			done = "verified, and its branch adds nothing to " + r.pre.target + "; task closed"
		default:
			rep.Landed, done = commit, fmt.Sprintf("landed %.10s on %s from its recorded PASS", commit, r.pre.target)
		}
	}
	r.releaseDeadClaim(ctx, dead.ID, t.ID, done, resumeAt)
	line := fmt.Sprintf("recovered run %s of %s: %s", dead.ID, t.ID, done)
	say(r.live, t.ID, "%s", line)
	if rep != nil {
		rep.Message = line
	}
	return rep, nil
}

// reopenReason says why recovery does not land a passed run ("" when it does): the config, or
// --no-land on that run (its release was cut short) or on this one.
func (r *run) reopenReason(ctx context.Context, runID string, noLand bool) string {
	if r.app.Config.RecoverPassed == config.RecoverReopen {
		return "recover_passed is reopen"
	}
	events, err := r.st.Events(ctx, runID)
	if err == nil && slices.ContainsFunc(events, func(e store.Event) bool { return e.Type == "land_skipped" }) {
		return "it was run with --no-land"
	}
	if noLand {
		return "--no-land"
	}
	return ""
}

// releaseDeadClaim gives a dead run's claim back as its own release would have, bringing the
// task's notes and labels to that run's end; resumeAt is its landing's (landRefusal.resumeAt).
func (r *run) releaseDeadClaim(ctx context.Context, runID, taskID, what, resumeAt string) {
	if t, err := r.tr.Get(ctx, taskID); err == nil {
		status := ""
		if t.Status == tracker.StatusInProgress {
			status = tracker.StatusOpen
		}
		m, err := newTaskMirror(r.tr, t, r.app.redact)
		if err == nil {
			m.resumeAt = resumeAt
			_, err = m.finishRun(ctx, loop.VerdictPass, status)
		}
		if err != nil && status != "" {
			_ = r.tr.SetStatus(ctx, taskID, status, "") // the task handed back, if bare
		}
	}
	_ = r.st.SetClaim(ctx, runID, store.ClaimReleased)
	_ = r.st.AppendEvent(ctx, runID, store.Event{TS: r.app.Now(), Type: "pass_recovered",
		Message: "the run's process died after its PASS was recorded; recovered: " + what})
}

// recordLanding records a landing a killed process did not, and finishes what it left undone:
// the task's close, the journal on the squash commit, the parents the task completes.
func (a *App) recordLanding(ctx context.Context, st *store.Store, req landRequest, commit string) error {
	reason := landingReason(commit, req.target, req.runID)
	tr, err := a.Tracker()
	if err == nil {
		landedAfterAll(ctx, tr, req.task)
		err = tr.SetStatus(ctx, req.task.ID, tracker.StatusClosed, reason)
	}
	if err != nil {
		return fmt.Errorf("close task %s: %w", req.task.ID, err)
	}
	_ = st.SetLanded(ctx, req.runID, commit)
	_ = st.SetClaim(ctx, req.runID, store.ClaimReleased)
	a.lander().noteLanding(ctx, st, req, commit)
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: a.Now(), Type: "landed", Message: reason + " (found by recovery)",
		Data: map[string]any{"commit": commit, "target": req.target}})
	if req.task.Parent != "" {
		a.lander().completeParents(ctx, st, guardedRun{runID: req.runID, taskID: req.task.ID, target: req.target}, commit, req.live) // not under the landing lock
	}
	return nil
}

// giveBackClaim hands back the claim a dead run held, once `git norma land` landed (or
// refused) its PASS: a task the landing did not close is open again, with the work to resume
// at resumeAt if the refusal left one (landRefusal.resumeAt), as the run's own release would.
func (a *App) giveBackClaim(ctx context.Context, st *store.Store, runID, taskID, resumeAt string) {
	if tr, err := a.Tracker(); err == nil {
		if t, err := tr.Get(ctx, taskID); err == nil && t.Status == tracker.StatusInProgress {
			handedBack := false
			if resumeAt != "" {
				if m, err := newTaskMirror(tr, t, a.redact); err == nil {
					m.resumeAt = resumeAt
					_, err = m.finishRun(ctx, loop.VerdictPass, tracker.StatusOpen)
					handedBack = err == nil
				}
			}
			if !handedBack {
				_ = tr.SetStatus(ctx, taskID, tracker.StatusOpen, "")
			}
		}
	}
	_ = st.SetClaim(ctx, runID, store.ClaimReleased)
	_ = st.AppendEvent(ctx, runID, store.Event{TS: a.Now(), Type: "claim_recovered",
		Message: "git norma land took over this run's PASS after its process died; its claim is given back"})
}

// removeDeadWorktree removes a dead run's worktree (its work is on the branch, or rescued onto
// it, which then no longer matches the PASS and does not land).
func (r *run) removeDeadWorktree(ctx context.Context, dead store.Run) {
	path := filepath.Join(r.app.Repo.Root, filepath.FromSlash(dead.RunDir), "workspace")
	if _, err := os.Stat(path); err == nil {
		r.savingDeadWork(ctx, dead.TaskID, func() {
			r.removeRunWorktree(ctx, path, dead.ID, dead.TaskID, "a process of this run, which died")
		})
	}
}

// savingDeadWork runs save, which commits what a dead run of task left uncommitted onto its
// branch, under the landing lock, as every move of a task branch by git-norma: an unconfined
// step's fallback guard, or a landing re-checking under it, takes a task branch moved by no
// live run for its agent's doing, and moves it back. Interrupted, nothing is saved or removed.
func (r *run) savingDeadWork(ctx context.Context, task string, save func()) {
	unlock, err := r.app.Repo.takeLandLock(ctx, fmt.Sprintf("a run of %s saving the work of a run that died (process %d)", task, os.Getpid()),
		"save the work of a run of "+task+" that died", r.live, task)
	if err == nil {
		save()
		unlock()
	}
}

// clearRecheck removes the scratch workspace a killed landing re-check of the run left (git
// would refuse to add it again); nothing in it is anyone's work.
func (r *run) clearRecheck(ctx context.Context, dead store.Run) {
	path := filepath.Join(r.app.Repo.Root, filepath.FromSlash(dead.RunDir), "recheck", "workspace")
	if _, err := os.Stat(path); err != nil {
		return
	}
	var removed bool
	err := r.app.Repo.withWorktreeLock(ctx, func() (err error) {
		removed, err = r.wm.ClearScratch(ctx, path)
		return err
	})
	if err == nil && removed {
		_ = r.st.AppendEvent(ctx, dead.ID, store.Event{TS: r.app.Now(), Type: "recheck_cleared",
			Message: "removed the landing re-check workspace a killed process left: " + path})
	}
}

// recoverCrashed is what `loop` does before selecting, so that no task stays in progress
// because of a dead run: dead runs are reconciled, and finished runs still holding their
// task's claim are recovered under the task's lock. A task another process works on is left
// alone. What it does is said on live; target is where the loop lands ("": nowhere to land).
func (a *App) recoverCrashed(ctx context.Context, st *store.Store, target string, noLand bool, live loop.LiveFunc) error {
	tr, err := a.Tracker()
	if err != nil {
		return err
	}
	if target == "" {
		return nil // nothing can land; the first run says why, with its fix
	}
	base := &run{app: a, pre: &preflight{target: target}, tr: tr, st: st, wm: a.Repo.Worktrees(ctx), live: live}
	if err := base.reconcile(ctx); err != nil {
		return err
	}
	held, err := st.RunsWithClaim(ctx, store.ClaimHeld)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, h := range held {
		if h.Status == store.StatusRunning || h.TaskID == "" || seen[h.TaskID] {
			continue
		}
		seen[h.TaskID] = true
		if err := base.recoverTask(ctx, h, noLand); err != nil {
			say(live, h.TaskID, "recovering task %s failed: %v", h.TaskID, err)
		}
	}
	if a.TrackerKind() == "jsonl" {
		base.closeRevertedClaims(ctx)
	}
	// And what dead workers elsewhere left: tasks whose lease ran out.
	if err := a.leases().reap(ctx, tr, live); err != nil {
		say(live, "", "looking for tasks whose lease ran out failed: %v", err)
	}
	return nil
}

// closeRevertedClaims closes the embedded backlog's tasks in progress that no run holds and
// that already landed: their claim came back with the file (a `git checkout`, `stash` or
// `reset` to a commit made while their run worked). No loop selects a task in progress, so
// the landing that closes a task reverted to open (landedBefore) would never come by.
func (base *run) closeRevertedClaims(ctx context.Context) {
	heads, err := selectionHeads(ctx, base.tr)
	if err != nil {
		return // selection says what is wrong with the backlog
	}
	for _, h := range heads {
		if h.Status != tracker.StatusInProgress {
			continue
		}
		lock, err := base.app.Repo.acquireTaskLock(h.ID)
		if err != nil {
			continue // a live run holds it
		}
		t, err := base.tr.Get(ctx, h.ID)
		if err == nil && t.Status == tracker.StatusInProgress && t.Assignee == "" {
			p, err := base.app.lander().landedBefore(ctx, base.st, t, base.pre.target)
			if err == nil && p.Commit != "" && closeLanded(ctx, base.tr, t, base.pre.target, p) == nil {
				say(base.live, t.ID, "task %s was in progress, but it landed as %.10s on %s: closed", t.ID, p.Commit, base.pre.target)
			}
		}
		lock.Release()
	}
}

// recoverTask recovers, under the task's lock, the finished runs of held's task that still hold
// its claim. A task no longer in progress is held by none: that is recorded, so it is not
// looked at again.
func (base *run) recoverTask(ctx context.Context, held store.Run, noLand bool) error {
	taskID := held.TaskID
	lock, err := base.app.Repo.acquireTaskLock(taskID)
	if err != nil {
		return nil // a live run has it
	}
	defer lock.Release()
	t, err := base.tr.Get(ctx, taskID)
	if err != nil {
		return err
	}
	if t.Status != tracker.StatusInProgress {
		_ = base.st.SetClaim(ctx, held.ID, store.ClaimReleased)
		return nil
	}
	r := *base
	r.pre = &preflight{task: t, target: base.pre.target}
	rep, err := r.recoverPassed(ctx, noLand)
	if err == nil && rep == nil && r.recoverClaim(ctx) {
		say(r.live, taskID, "recovered task %s: its claim was left by a run that died; reopened", taskID)
	}
	return err
}
