package gitnorma

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/commitmsg"
	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// landRequest is a PASSed run whose task branch should land.
type landRequest struct {
	runID  string
	task   tracker.Task
	target string
	// claimedByUs means an in_progress status is this run's own claim, not someone else's.
	claimedByUs bool
	// leaseLost says the run's lease was reclaimed while it worked: its work does not land.
	leaseLost bool
	// checkedHere says the PASS is this process's own Check, just made, not read from the store.
	checkedHere bool
	// forced is a run made with --force, which may have gone ahead of open tasks blocking
	// this one: its close overrides the tracker's refusal (bd close --force).
	forced bool
	// stepNotes are the run's unwritten step notes: the landing writes them with the squash
	// commit's, in one commit of the notes ref.
	stepNotes []notes.Note
	// live hears what the landing waits for.
	live loop.LiveFunc
}

// takeLandLock takes .norma/locks/land.lock as holder, to do what doing says. When another
// holds it, live hears who first: a landing re-checking a moved target, or an unconfined
// step's guard, may take minutes.
func (r *Repo) takeLandLock(ctx context.Context, holder, doing string, live loop.LiveFunc, taskID string) (func(), error) {
	path := r.Path("locks", "land.lock")
	return flock.WaitFor(ctx, path, holder, func() {
		say(live, taskID, "waiting to %s: %s holds the landing lock", doing, lockHolder(path))
	})
}

// lockHolder is who holds the lock at path, as it said when it took it: one printable line (an
// unconfined agent could have written it).
func lockHolder(path string) string {
	f, err := loop.OpenRegular(flock.HolderPath(path))
	if err != nil {
		return "another git-norma"
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 512))
	if line := loop.OneLine(string(data), 200); line != "" {
		return line
	}
	return "another git-norma"
}

// landRefusal is a landing that did not happen: the target and every checkout are unchanged.
type landRefusal struct {
	reason error
	paths  []string
	hint   string
	// resumeAt, when set, is the branch head the landing verified, refused for a reason
	// that leaves that work good (the remote did not answer, refused the push, or kept
	// moving): the next run checks the same tree again and lands it, no agent working on it
	// again (taskMirror.finishRun), unless the branch moved since.
	resumeAt string
}

func (e *landRefusal) Error() string { return e.reason.Error() }

// land squashes the task branch onto the target, closes the task, and records both; it
// returns the squash commit ("" when the branch added nothing). land.lock serialises
// landings: each merges against the target as the previous one left it.
func (ld *lander) land(ctx context.Context, st *store.Store, req landRequest) (string, error) {
	unlock, err := ld.repo.takeLandLock(ctx, fmt.Sprintf("the landing of %s (run %s, process %d)", req.task.ID, req.runID, os.Getpid()), "land", req.live, req.task.ID)
	if err != nil {
		return "", err
	}
	defer unlock()
	branch := worktree.TaskBranch(req.task.ID)
	if err := ld.checkStillOpen(ctx, st, req); err != nil {
		return "", ld.refuse(ctx, st, req, err)
	}
	var res worktree.LandResult
	var head, tip string
	for attempt := 1; ; attempt++ {
		if err := ld.syncTarget(ctx, req.target); err != nil {
			var r *landRefusal
			if errors.As(err, &r) {
				// The PASS stays recorded: once that is fixed, the same verified work lands.
				r.hint += "; then land it: git norma land " + req.task.ID
				r.resumeAt = head
				if head == "" { // refused before any attempt checked it: the PASS's own head
					if run, err := st.Run(ctx, req.runID); err == nil {
						r.resumeAt = run.PassHead
					}
				}
			}
			return "", ld.refuse(ctx, st, req, err)
		}
		if p, err := ld.earlierLanding(ctx, st, req); err != nil {
			return "", err
		} else if p.Commit != "" {
			return ld.adoptLanding(ctx, st, req, p)
		}
		if head, tip, err = ld.recheckOnTarget(ctx, st, req); err != nil {
			return "", ld.refuse(ctx, st, req, err)
		}
		msg, err := ld.landMessage(ctx, st, req)
		if err != nil {
			return "", err
		}
		// Under the worktree lock: landing reads which worktree has the target checked out.
		err = ld.repo.withWorktreeLock(ctx, func() (err error) {
			res, err = ld.repo.Worktrees(ctx).Land(ctx, worktree.LandOptions{Target: req.target, TaskBranch: branch, Head: head, Base: tip, Message: msg, Remote: ld.cfg.Remote})
			return err
		})
		if err == nil {
			break
		}
		var le *worktree.LandError
		if !errors.As(err, &le) {
			return "", err
		}
		if errors.Is(err, worktree.ErrBranchTaken) {
			// Pushed by a worker that lost the claim to this run: the claim decides. Deleted
			// there while nobody holds the task: the copy held nobody's work, this is the one.
			deletedUnheld := !req.claimedByUs && le.Theirs == ""
			if attempt < remoteLandAttempts && (deletedUnheld || req.claimedByUs && ld.holdsClaim(ctx, st, req.runID, req.task.ID)) {
				why := claimDecides(req.task.ID)
				if deletedUnheld {
					why = fmt.Sprintf("nobody holds task %s and %s has no copy of it any more (deleted there): the landing pushes it again", req.task.ID, ld.cfg.Remote)
					say(req.live, req.task.ID, "%s", why)
				}
				if err := ld.takeBackBranch(ctx, st, req.runID, req.task.ID, err, why); err != nil && !errors.Is(err, worktree.ErrBranchTaken) {
					return "", err
				}
				continue // moved again since: the next try looks again
			}
			hint := "its new holder runs it; this run's work stays on the local " + branch
			if !req.claimedByUs {
				// git norma land of an open task: a teammate pushed, and no run will come by itself.
				hint = fmt.Sprintf("nobody holds the task: run it again to check what is on %s and land it: git norma run %s (it goes on from %s's %s; where the local one went its own way, it is kept under %s)",
					ld.cfg.Remote, req.task.ID, ld.cfg.Remote, branch, worktree.KeptPrefix+req.task.ID+"/")
			}
			return "", ld.refuse(ctx, st, req, &landRefusal{reason: fmt.Errorf("task %s was taken over: %v, and this run's work does not land over it", req.task.ID, err),
				hint: hint})
		}
		if errors.Is(err, worktree.ErrTargetMoved) {
			// Another worker landed first, a run brought it up to the remote's, or someone
			// committed: look again (it may be this very task), re-check, land again.
			if attempt < remoteLandAttempts {
				_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "land_push_rejected",
					Message: fmt.Sprintf("attempt %d: %v; landing again on what is there now", attempt, err)})
				if err := worktree.Sleep(ctx, landRetryPause()); err != nil {
					return "", err
				}
				continue
			}
			if ld.cfg.Remote == "" {
				return "", ld.refuse(ctx, st, req, &landRefusal{reason: err, hint: resolveHint(req, le)})
			}
			return "", ld.refuse(ctx, st, req, ld.contended(ctx, req, attempt, head, err))
		}
		refusal := &landRefusal{reason: err, paths: le.Paths, hint: resolveHint(req, le)}
		if errors.Is(err, worktree.ErrPushRefused) {
			refusal.resumeAt = head
		}
		return "", ld.refuse(ctx, st, req, refusal)
	}
	ld.crash.reach("landed")
	reason, landed := landingReason(res.Commit, req.target, req.runID), res.Commit
	if res.Empty {
		reason = fmt.Sprintf("verified by git-norma run %s; the branch added no changes to %s", req.runID, req.target)
		landed = "" // nothing landed to note; the steps' notes still go on their commits
	}
	_ = st.SetLanded(ctx, req.runID, res.Commit)
	ld.noteLanding(ctx, st, req, landed)
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "landed", Message: reason,
		Data: map[string]any{"commit": res.Commit, "target": req.target, "parent": res.Parent, "checkout": res.Checkout}})
	if res.LocalBehind != "" {
		// On the remote, where it counts; the local target catches up at the next run.
		_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "local_target_behind",
			Message: fmt.Sprintf("landed on %s/%s, but the local %s did not follow: %s (git merge --ff-only %s/%s brings it there)",
				ld.cfg.Remote, req.target, req.target, res.LocalBehind, ld.cfg.Remote, req.target)})
	}
	// The task's check worktree served its last check: landed, the task needs no other.
	if err := ld.repo.removeCheckTree(ctx, req.task.ID); err != nil {
		_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "worktree_kept", Message: "check worktree: " + err.Error()})
	}
	if ld.cfg.DeleteBranchOnLand {
		ld.deleteTaskBranch(ctx, st, req, branch, head)
	}
	tr, err := ld.tracker()
	if err == nil {
		landedAfterAll(ctx, tr, req.task)
	}
	if fc, ok := tr.(tracker.ForceCloser); ok && err == nil && req.forced {
		err = fc.CloseForced(ctx, req.task.ID, reason)
	} else if err == nil {
		err = tr.SetStatus(ctx, req.task.ID, tracker.StatusClosed, reason)
	}
	if err != nil {
		return res.Commit, failf(fmt.Sprintf("close it by hand with the reason %q", reason),
			"landed %.10s on %s, but closing task %s failed: %v", res.Commit, req.target, req.task.ID, err)
	}
	ld.crash.reach("closed")
	ld.shareJournal(ctx, st, req)
	if req.task.Parent != "" {
		ld.completeParents(ctx, st, guardedRun{runID: req.runID, taskID: req.task.ID, target: req.target, holdsLanding: true}, cmp.Or(res.Commit, res.Parent), req.live)
	}
	return res.Commit, nil
}

func (ld *lander) refuse(ctx context.Context, st *store.Store, req landRequest, err error) error {
	var lr *landRefusal
	if !errors.As(err, &lr) {
		return err
	}
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "land_refused", Message: lr.Error(),
		Data: map[string]any{"paths": lr.paths}})
	return lr
}

// resolveHint names the commands that get a refused landing through.
func resolveHint(req landRequest, le *worktree.LandError) string {
	branch := worktree.TaskBranch(req.task.ID)
	switch {
	case errors.Is(le, worktree.ErrConflict):
		// In a worktree of its own: git norma check refuses a checkout whose branch is a task's
		// when it is the main one, and only a checked merge lands.
		return fmt.Sprintf("merge %s into the task branch in a worktree of its own and resolve the conflicts (git worktree add ../%s-merge %s && cd ../%s-merge && git merge %s), commit, check the merge there (git norma check %s), then: git norma land %s (and remove that worktree: git worktree remove ../%s-merge)",
			req.target, req.task.ID, branch, req.task.ID, req.target, req.task.ID, req.task.ID, req.task.ID)
	case errors.Is(le, worktree.ErrDirtyOverlap):
		return fmt.Sprintf("commit or stash your edits to those files in your checkout of %s, then: git norma land %s", req.target, req.task.ID)
	case errors.Is(le, worktree.ErrTargetBusy):
		return fmt.Sprintf("finish (or abort) it, then: git norma land %s", req.task.ID)
	case errors.Is(le, worktree.ErrCheckoutBusy) && strings.Contains(le.Detail, "index.lock"):
		// The landing waited for it: a lock still there may be one a killed git left.
		return fmt.Sprintf("a git command holds the index of your checkout of %s; once none runs there, remove the index.lock git names (a killed git leaves it behind), then: git norma land %s", req.target, req.task.ID)
	case errors.Is(le, worktree.ErrPushRefused):
		return "the remote said why above (branch protection, a token that may not push, or a hook of its own); once it takes this clone's pushes: git norma land " + req.task.ID
	case errors.Is(le, worktree.ErrCheckoutBusy):
		return fmt.Sprintf("finish (or abort) the merge in your checkout of %s, or wait for the git command holding it, then: git norma land %s", req.target, req.task.ID)
	default:
		return "try again: git norma land " + req.task.ID
	}
}

// landMessage builds the squash commit's message from the run's last plan and check outputs.
func (ld *lander) landMessage(ctx context.Context, st *store.Store, req landRequest) (string, error) {
	plan, check, last, err := runOutputs(ctx, st, req.runID)
	if err != nil {
		return "", err
	}
	return ld.redact.Apply(commitmsg.Message(ld.cfg.Commit, req.task, plan, check, req.runID, last)), nil
}

// runOutputs reads a run's last plan and check outputs as committed to the store with their
// steps, and its last step's index. A run recorded without them (an older git-norma's, a
// `git norma check`) has neither: its landing re-checks the task's own criteria.
func runOutputs(ctx context.Context, st *store.Store, runID string) (plan *loop.Plan, check *loop.Check, last int, err error) {
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(steps) > 0 {
		last = steps[len(steps)-1].Index
	}
	stored := false
	for _, s := range steps {
		if out, ok := storedOutput(s); ok {
			stored = true
			if out.Plan != nil {
				plan = out.Plan
			}
			if out.Check != nil {
				check = out.Check
			}
		}
	}
	if stored {
		return plan, check, last, nil
	}
	// A run recorded before the store kept step outputs (schema 4) has them in kv_run.
	kv, err := st.KV(ctx, runID)
	if err != nil {
		return nil, nil, 0, err
	}
	if raw, ok := kv[kvLastPlan]; ok {
		if err := json.Unmarshal(raw, &plan); err != nil {
			return nil, nil, 0, fmt.Errorf("run %s: stored plan: %w", runID, err)
		}
	}
	if raw, ok := kv[kvLastCheck]; ok {
		if err := json.Unmarshal(raw, &check); err != nil {
			return nil, nil, 0, fmt.Errorf("run %s: stored check: %w", runID, err)
		}
	}
	return plan, check, last, nil
}

// noteLanding writes req.stepNotes and puts the run's whole journal, ending with the landing
// entry, on the squash commit (squash merges carry no notes of the branch), in one commit of
// the notes ref. With commit "" (nothing landed) only the step notes are written.
func (ld *lander) noteLanding(ctx context.Context, st *store.Store, req landRequest, commit string) {
	all := slices.Clone(req.stepNotes)
	if commit != "" {
		steps, err := st.Steps(ctx, req.runID)
		if err != nil {
			return
		}
		entries := make([]notes.Entry, 0, len(steps)+1)
		for _, s := range steps {
			entries = append(entries, stepEntry(req.task.ID, s, ld.redact))
		}
		entries = append(entries, notes.Entry{TS: notes.Stamp(ld.now()), Kind: notes.KindLand, Task: req.task.ID,
			Run: req.runID, Verdict: "PASS", Commit: commit, Summary: "landed on " + req.target})
		all = append(all, notes.Note{Commit: commit, Entries: entries})
	}
	if err := ld.repo.NotesJournal().AddAll(ctx, all); err != nil {
		_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "mirror_failed", Message: err.Error()})
	}
}

// deleteTaskBranch removes a landed task branch (delete_branch_on_land) if it is still at the
// commit that landed: one that moved since holds work that did not land, and stays; so does
// one git refuses to delete (checked out, being rebased).
func (ld *lander) deleteTaskBranch(ctx context.Context, st *store.Store, req landRequest, branch, landed string) {
	msg := "deleted " + branch
	if why, err := ld.repo.deleteBranchAt(ctx, branch, landed); err != nil {
		msg = fmt.Sprintf("kept %s: %v", branch, err)
	} else if why != "" {
		msg = fmt.Sprintf("kept %s: %s", branch, why)
	} else if ld.cfg.Remote != "" {
		// Its copy there too (the landing pushed it): the remote would keep every task's.
		msg += " here and on " + ld.cfg.Remote
		if err := ld.repo.Worktrees(ctx).Remote(ld.cfg.Remote).DeleteTaskBranch(ctx, req.task.ID, landed); err != nil {
			msg = fmt.Sprintf("deleted %s here; kept on %s: %v", branch, ld.cfg.Remote, err)
		}
	}
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "branch_deleted", Message: msg})
}

// lander lands verified work and what a landing entails — the re-check on the target, the
// squash commit's message and notes, closing the task and the parents it completes — and
// answers who holds a task's claim.
type lander struct {
	repo    *Repo
	cfg     config.Config
	now     func() time.Time
	redact  redact.Redactor
	tracker func() (tracker.Tracker, error)
	kind    func() string // the tracker's kind (beads or jsonl), asked when needed
	crash   *crashpoints
}

func (a *App) lander() *lander {
	return &lander{repo: a.Repo, cfg: a.Config, now: a.Now, redact: a.redact, tracker: a.Tracker, kind: a.TrackerKind, crash: a.crash}
}
