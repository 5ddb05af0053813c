package gitnorma

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// guardedBranchLock waits until this run may make or move its task branch (see begin) and
// returns the release.
func (r *run) guardedBranchLock(ctx context.Context) (func(), error) {
	doing := "make the branch of " + r.pre.task.ID
	holder := fmt.Sprintf("a run of %s making its branch (process %d)", r.pre.task.ID, os.Getpid())
	if !r.app.confiner().shields(r.pre.sandbox) {
		return r.app.Repo.takeLandLock(ctx, holder, doing, r.live, r.pre.task.ID)
	}
	// Shared: confined runs do not wait for one another.
	path := r.app.Repo.Path("locks", guard.LockFile)
	return flock.WaitShared(ctx, path, func() {
		say(r.live, r.pre.task.ID, "waiting to %s: %s holds the fallback guard's lock", doing, lockHolder(path))
	})
}

// begin creates the run: id, directory, row, worktree, and the task claim.
func (r *run) begin(ctx context.Context, lock *RunLock) error {
	r.id = newRunID(r.started)
	r.dir = r.app.Repo.Path("runs", r.id)
	if err := lock.Record(r.id, r.started); err != nil {
		return err
	}
	// The task branch is made or moved (a dead run's work committed, the remote's copy taken,
	// the target merged in) once no fallback guard looks, which takes a task branch moved by
	// no live run for its agent's or checks' doing. Unconfined, also once no landing goes on
	// (its guard would take this run's moves the same way): under the landing lock.
	unlockBranch, err := r.guardedBranchLock(ctx)
	if err != nil {
		return err
	}
	defer func() { unlockBranch() }()
	if err := r.freeBranch(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.dir, "artifacts"), 0o700); err != nil {
		return withKind(ErrEnvironment, err)
	}
	// The task's journal so far opens progress.md (spec invariant 11).
	if prior := r.mirror.priorProgress(); prior != "" {
		if err := os.WriteFile(filepath.Join(r.dir, "artifacts", "progress.md"), []byte(prior), 0o600); err != nil {
			return err
		}
	}
	host, _ := os.Hostname()
	actor := "" // the embedded backlog's claims carry no assignee
	if r.app.TrackerKind() == "beads" {
		actor = r.app.Config.WorkerID() // bd's claim assigns the task to it (see App.Tracker)
	}
	err = r.st.CreateRun(ctx, store.Run{
		ID: r.id, CreatedAt: r.started, Goal: r.pre.task.Title, Status: store.StatusRunning,
		RunDir: filepath.ToSlash(filepath.Join(".norma", "runs", r.id)), TaskID: r.pre.task.ID, Actor: actor, Redo: r.forced,
	}, map[string]any{"target_branch": r.pre.target, "branch": worktree.TaskBranch(r.pre.task.ID), "pid": os.Getpid(), "host": host})
	if err != nil {
		return err
	}
	if takenOver := lock.Previous; takenOver.PID != 0 {
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.started, Type: "lock_taken_over",
			Message: fmt.Sprintf("the run lock was left by pid %d (run %s) on %s, which died; taken over", takenOver.PID, loop.OrDash(takenOver.RunID), takenOver.Host)})
	}
	err = r.resumeFromRemote(ctx)
	if err == nil {
		err = r.app.Repo.withWorktreeLock(ctx, func() error {
			var err error
			r.ws, err = r.wm.Create(ctx, worktree.CreateOptions{
				TaskID: r.pre.task.ID, RunID: r.id, Path: filepath.Join(r.dir, "workspace"), Target: r.pre.target, CatchUp: true,
			})
			return err
		})
	}
	unlockBranch()
	unlockBranch = func() {}
	if err != nil {
		r.finish(ctx, store.StatusFailed, "", "", err.Error())
		return err
	}
	// Recorded before anything else can end the run (a failing or interrupted worktree.setup):
	// the branch exists now, built on the target's commits, and a landing of a later run must
	// know which (checkForkPoints).
	if err := r.st.SetForkPoint(ctx, r.id, store.ForkPoint{Base: r.ws.Base(), Started: r.ws.Started, Target: r.pre.target}); err != nil {
		return err
	}
	if err := r.refuseUnlandable(ctx); err != nil {
		return err
	}
	if err := r.setUpWorkspace(ctx); err != nil {
		return err
	}
	r.reportCatchUp(ctx, r.ws.CaughtUp)
	// The intent first: a kill between the claim and its record leaves a claim the store knows.
	if err := r.st.SetClaim(ctx, r.id, store.ClaimIntent); err != nil {
		return err
	}
	r.app.crash.reach("claiming")
	if err := r.claimTask(ctx); err != nil {
		_ = r.st.SetClaim(ctx, r.id, store.ClaimReleased)
		if errors.Is(err, tracker.ErrClaimed) {
			// Claimed first by someone else: nothing of this run's is left behind.
			msg := fmt.Sprintf("task %s was claimed by another run or person first", r.pre.task.ID)
			r.finish(ctx, store.StatusStopped, "", StopClaimLost, msg)
			r.release(ctx, true)
			return &Error{Err: fmt.Errorf("%s: %w: %w", msg, ErrClaimLost, err),
				Hint: "git norma next picks another ready task; git norma loop goes on by itself"}
		}
		return fmt.Errorf("claim task %s: %w", r.pre.task.ID, err)
	}
	r.app.crash.reach("claimed")
	r.claimed = true
	r.leaseLost = new(atomic.Pointer[string])
	if r.mirror.lease > 0 {
		// Asked only once the run's lease has run out: a task no longer in progress was reaped
		// (reopened) or closed meanwhile, and is no longer this run's either.
		r.mirror.takenBy = func(ctx context.Context) string {
			t, err := r.tr.Get(ctx, r.pre.task.ID)
			switch {
			case err != nil:
				return "" // unknown: the next write asks again, the landing looks again
			case t.Status != tracker.StatusInProgress:
				return t.Status
			}
			if holder, _ := r.app.lander().otherHolder(ctx, r.st, r.id, t); holder != "" {
				return "claimed by " + holder
			}
			return ""
		}
		r.mirror.onLost = func(now string) {
			if why := "task " + r.pre.task.ID + " is " + now; r.leaseLost.CompareAndSwap(nil, &why) {
				_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "lease_lost",
					Message: fmt.Sprintf("task %s is %s now: this run no longer writes its state, and its work will not land", r.pre.task.ID, now)})
			}
		}
	}
	r.stopLease = r.mirror.keepLease(ctx, func(err error) {
		if why := err.Error(); tracker.LeaseLost(err) && r.leaseLost.CompareAndSwap(nil, &why) {
			_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "lease_lost",
				Message: fmt.Sprintf("the claim of task %s is no longer this run's (%v): its work will not land", r.pre.task.ID, err)})
			return
		}
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "mirror_failed", Message: "lease: " + err.Error()})
	})
	return r.st.SetClaim(ctx, r.id, store.ClaimHeld)
}

// claimTask claims the task; where the tracker keeps the state apart (bd), the claim carries a
// first lease, so a worker that dies right after claiming leaves one to run out (reaper.go).
func (r *run) claimTask(ctx context.Context) error {
	var t tracker.Task
	var err error
	if k, ok := r.tr.(tracker.StateKeeper); ok && k.KeepsStateApart() && r.mirror.lease > 0 {
		var state json.RawMessage
		if state, err = r.mirror.claimState(r.id); err == nil {
			t, err = k.ClaimWithState(ctx, r.pre.task.ID, "", state)
		}
	} else {
		t, err = r.tr.Claim(ctx, r.pre.task.ID, "")
	}
	r.mirror.trackerLeases = t.LeaseExpires != nil
	return err
}

// ErrClaimLost is a run that lost its task's claim to someone else: not a failure of the
// task, and `loop` goes on with the next.
var ErrClaimLost = errors.New("the claim was lost")

// lostClaim is an error, with its own message, that is a lost claim (errors.Is ErrClaimLost).
type lostClaim struct{ error }

func (lostClaim) Is(target error) bool { return target == ErrClaimLost }

// StopClaimLost is the stop reason of such a run.
const StopClaimLost = "claim_lost"

// StopTaskBusy is the stop reason of a loop's run whose task another git-norma process held.
const StopTaskBusy = "task_busy"

// StopLeaseLost is the stop reason of a run whose claim's lease ran out while it worked and
// whose task was taken back (reaped, or claimed by another worker).
const StopLeaseLost = "lease_lost"

// setUpWorkspace prepares the new workspace as the repository asks (.worktreeinclude,
// worktree.setup); its output goes to the run dir's setup.txt. A failure ends the run.
func (r *run) setUpWorkspace(ctx context.Context) error {
	log := &lazyLog{path: filepath.Join(r.dir, "setup.txt")}
	defer log.Close()
	setup := checkerOf(r.app.Repo, r.app.Config, r.app.crash).worktreeSetup(log)
	setUp := func() error {
		err := r.wm.SetUp(ctx, r.ws.Dir(), setup)
		if err == nil && len(setup.Commands) > 0 {
			err = r.setupWroteOnlyIgnored(ctx)
		}
		return err
	}
	var err error
	if len(setup.Commands) > 0 && !r.app.confiner().shields(r.pre.sandbox) {
		// A resumed run's workspace holds the agent's commits: setup starts the agent's code
		// (a deps script it changed), unconfined, under the fallback guard as a step's agent.
		err = r.app.lander().guardedChecks(ctx, r.st, guardedRun{runID: r.id, taskID: r.pre.task.ID, target: r.pre.target}, setUp,
			"worktree.setup of the run of "+r.pre.task.ID, "the run stops")
	} else {
		err = setUp()
	}
	if err != nil {
		status, reason := store.StatusFailed, ""
		if errors.Is(err, ErrStopped) { // the guard's violation, as a step's would be
			status, reason = store.StatusStopped, loop.StopGuardViolation
		}
		r.finish(ctx, status, "", reason, err.Error())
		r.removeWorktree(ctx)
		return err
	}
	return nil
}

// setupWroteOnlyIgnored refuses setup commands that changed what git tracks or does not ignore:
// the Do step's commit would take it for the task's work. What they wrote is dropped.
func (r *run) setupWroteOnlyIgnored(ctx context.Context) error {
	now, err := r.ws.State(ctx)
	if err != nil {
		return err
	}
	changed, err := r.ws.Changes(ctx, worktree.State{Head: now.Head})
	if err != nil || len(changed) == 0 {
		return err
	}
	_ = r.ws.Discard(ctx, now)
	return fmt.Errorf("worktree.setup changed files git tracks or does not ignore (%s): make it write only ignored paths (or ignore them in .gitignore)", strings.Join(changed, ", "))
}

// refuseUnlandable ends a run that would land, before its setup and agents, when its landing
// is sure to be refused: the task branch holds target commits the target no longer has
// (checkForkPoints; the target amended, reset or rebased since). Every run of the task would
// otherwise plan, do and check it again, to be refused at the end, until the person rebuilds
// or deletes the branch as the refusal says. Checked after the catch-up, which may have
// restarted the branch from the target (then it lands).
func (r *run) refuseUnlandable(ctx context.Context) error {
	if r.noLand {
		return nil
	}
	head, err := r.app.Repo.Git.ResolveCommit(ctx, "refs/heads/"+r.ws.Branch())
	if err != nil {
		return nil // the landing says what is wrong
	}
	var le *landRefusal
	if !errors.As(r.app.lander().checkForkPoints(ctx, r.st, landRequest{runID: r.id, task: r.pre.task, target: r.pre.target}, head), &le) {
		return nil
	}
	msg := fmt.Sprintf("task %s cannot land: %v", r.pre.task.ID, le)
	r.finish(ctx, store.StatusFailed, "", "", msg)
	r.release(ctx, true)
	return &Error{Kind: ErrLandRefused, Err: errors.New(msg), Hint: le.hint}
}

// reportCatchUp records (and says) how the existing task branch was brought up to date with
// the target: merged, or saved and restarted because it conflicted.
func (r *run) reportCatchUp(ctx context.Context, c worktree.CatchUp) {
	branch, target := worktree.TaskBranch(r.pre.task.ID), r.pre.target
	ev := store.Event{TS: r.app.Now(), Data: map[string]any{"catch_up": c}}
	switch {
	case c.Merged != "":
		ev.Type, ev.Message = "branch_merged", fmt.Sprintf("merged %s into %s (%s): the run starts from what landed meanwhile", target, branch, short10(c.Merged))
	case c.Kept != "":
		ev.Type, ev.Message = "branch_restarted", fmt.Sprintf("%s conflicts with %s (%s); it is kept as %s and the run starts over from %s",
			branch, target, strings.Join(c.Conflicts, ", "), c.Kept, target)
	default:
		return
	}
	say(r.live, r.pre.task.ID, "%s", ev.Message)
	_ = r.st.AppendEvent(ctx, r.id, ev)
}

// checkClaimable refuses a task in progress (someone else's), re-read if reconciliation
// changed it, else as prepare read it (bd's claim, a compare-and-swap, still refuses a task
// claimed meanwhile).
func (r *run) checkClaimable(ctx context.Context) error {
	t := r.pre.task
	if r.reconciledOwn {
		var err error
		if t, err = r.tr.Get(ctx, r.pre.task.ID); err != nil {
			return err
		}
	}
	if t.Status == tracker.StatusInProgress && r.recoverClaim(ctx) {
		t.Status = tracker.StatusOpen
	}
	if t.Status != tracker.StatusOpen {
		return r.notClaimable(t)
	}
	r.pre.task = t
	var err error
	if r.mirror, err = newTaskMirror(r.tr, t, r.app.redact); err != nil {
		return err
	}
	r.mirror.lease, r.mirror.now = r.app.leases().length, r.app.Now
	r.mirror.catchUp(r.crashedJournal(ctx))
	return nil
}

// notClaimable says who holds a task that is not open, and what to do: a worker's claim whose
// lease still holds is not for anyone to take (its worker renews it while it works, and once
// the worker stops, a loop reopens the task when the lease has run out).
func (r *run) notClaimable(t tracker.Task) error {
	who := cmp.Or(t.Assignee, "another run or person")
	err := fmt.Errorf("task %s is %s (claimed by %s)", t.ID, t.Status, who)
	hint := "if nobody is working on it, set its status back to open in the tracker"
	if t.Status != tracker.StatusInProgress {
		return &Error{Err: err, Hint: hint}
	}
	if st, e := taskstate.Read(r.tr, t); e == nil && st.LeaseUntil != "" {
		if until, e := time.Parse(time.RFC3339, st.LeaseUntil); e == nil && r.app.Now().Before(until) {
			hint = fmt.Sprintf("%s holds it while it works, renewing its claim's lease (now until %s); once it stops, the next loop reopens the task when the lease has run out",
				who, until.Local().Format(time.DateTime))
		}
	}
	// Claimed since it was selected: for loop, a lost claim.
	return &Error{Err: lostClaim{err}, Hint: hint}
}

// freeBranch makes sure no other worktree holds the task branch: a run worktree holding it
// (we hold the task lock) is a dead run's; one outside .norma/ is the user's. Under the
// worktree lock: git's bookkeeping of a worktree a parallel run is adding can be half made.
func (r *run) freeBranch(ctx context.Context) error {
	branch := worktree.TaskBranch(r.pre.task.ID)
	return r.app.Repo.withWorktreeLock(ctx, func() error {
		holder, err := r.wm.Holder(ctx, branch)
		if err != nil || holder == "" {
			return err
		}
		if !strings.HasPrefix(holder, r.app.Repo.Path("runs")+string(filepath.Separator)) {
			return failf("switch that worktree to another branch (git -C "+holder+" switch -), then run again",
				"branch %s is checked out in %s", branch, holder)
		}
		return r.removeLocked(ctx, holder, filepath.Base(filepath.Dir(holder)), r.pre.task.ID, "a process of this run, which died")
	})
}
