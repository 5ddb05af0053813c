package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// StatusAlreadyLanded is the report status of a run that did not run: its task's work is
// already on the target, so the task was closed instead (run --force redoes it).
const StatusAlreadyLanded = "already_landed"

// clockSkew widens the history walk for a task's landing: a commit made on another machine
// can carry a date slightly before the task's creation time on this one.
const clockSkew = time.Hour

// priorLanding is a landing of a task found on the target.
type priorLanding struct {
	Commit string
	RunID  string
}

// landedBefore finds a landing of task already on target: a commit since the task was created
// whose Norma-Task trailer names it, or the landing one of its runs recorded in the store, if
// still on the target and the store can be trusted (storeDistrust). Not the tracker's status:
// a `git stash` or checkout of a tracked backlog reopens a landed task.
func (ld *lander) landedBefore(ctx context.Context, st *store.Store, task tracker.Task, target string) (priorLanding, error) {
	q := git.LogQuery{Revs: []string{"refs/heads/" + target}, Grep: "Norma-Task: " + task.ID, Fixed: true}
	if !task.CreatedAt.IsZero() {
		q.Since = task.CreatedAt.Add(-clockSkew).UTC().Format(time.RFC3339)
	}
	out, err := ld.repo.Git.Log(ctx, landingTrailers, q)
	if err != nil {
		return priorLanding{}, fmt.Errorf("look for an earlier landing of %s on %s: %w", task.ID, target, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if commit, run, ok := landingOf(line, task.ID); ok {
			return priorLanding{Commit: commit, RunID: run}, nil
		}
	}
	if storeDistrust(ctx, st, ld.shieldedNow()) != "" {
		// As forgeable as a PASS there (trust.go): it must not close a task that never landed.
		return priorLanding{}, nil
	}
	return ld.repo.storeLanding(ctx, st, task, target)
}

// landingTrailers is the git log format landingOf reads: a commit and the trailers a landing
// carries.
const landingTrailers = "%H%x00%(trailers:key=Norma-Task,valueonly,separator=%x2C)%x00%(trailers:key=Norma-Run,valueonly,separator=%x2C)%x00%(trailers:key=Norma-Verdict,valueonly,separator=%x2C)"

// landingOf reads one line of landingTrailers: the commit and run that landed task, when it
// names the task, one run and a PASS, as squash commits do. A person's message that only names
// the task (Norma-Task: <id>, as one refers to an issue) is no landing.
func landingOf(line, task string) (commit, run string, ok bool) {
	f := strings.Split(line, "\x00")
	if len(f) != 4 || !slices.Contains(strings.Split(f[1], ","), task) {
		return "", "", false
	}
	runs := strings.Split(f[2], ",")
	if len(runs) != 1 || runs[0] == "" || f[3] != "PASS" {
		return "", "", false
	}
	return f[0], runs[0], true
}

// landingOfRun is the commit on target that landed head for run of task ("" for none): a
// landing by its trailers (landingOf) whose content is head (Manager.LandedAt), as a person's
// commit naming the run holds none of its work; with no head known, the trailers alone. Only
// commits since head are walked: a squash commit never has it as an ancestor. With run "",
// any run's landing of head counts (head must be known then).
func (r *Repo) landingOfRun(ctx context.Context, target, task, run, head string) string {
	grep := "Norma-Run: " + run
	if run == "" {
		grep = "Norma-Task: " + task
	}
	q := git.LogQuery{Revs: []string{"refs/heads/" + target}, Grep: grep, Fixed: true, NoMerges: true}
	if head != "" {
		q.Not = []string{head}
	}
	out, err := r.Git.Log(ctx, landingTrailers, q)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		commit, by, ok := landingOf(line, task)
		if !ok || (run != "" && by != run) {
			continue
		}
		if head == "" {
			return commit
		}
		if landed, err := r.Worktrees(ctx).LandedAt(ctx, commit, head); err == nil && landed {
			return commit
		}
	}
	return ""
}

// storeLanding is the landing the store records for one of the task's runs since it was
// created, if its commit is on target.
func (r *Repo) storeLanding(ctx context.Context, st *store.Store, task tracker.Task, target string) (priorLanding, error) {
	runs, err := st.RunsForTask(ctx, task.ID, 0) // however many checks of the task came since
	if err != nil {
		return priorLanding{}, err
	}
	for _, rec := range runs {
		if rec.LandedCommit == "" || rec.CreatedAt.Before(task.CreatedAt.Add(-clockSkew)) {
			continue
		}
		if on, err := r.Git.IsAncestor(ctx, rec.LandedCommit, "refs/heads/"+target); err == nil && on {
			return priorLanding{Commit: rec.LandedCommit, RunID: rec.ID}, nil
		}
	}
	return priorLanding{}, nil
}

// landingReason is the close reason of a landed task.
func landingReason(commit, target, runID string) string {
	return fmt.Sprintf("landed as %.10s on %s by git-norma run %s", commit, target, loop.OrDash(runID))
}

// closeLanded closes a task whose work is already on the target, as its landing would have.
func closeLanded(ctx context.Context, tr tracker.Tracker, task tracker.Task, target string, p priorLanding) error {
	reason := landingReason(p.Commit, target, p.RunID)
	landedAfterAll(ctx, tr, task)
	if err := tr.SetStatus(ctx, task.ID, tracker.StatusClosed, reason); err != nil {
		return failf(fmt.Sprintf("close it by hand with the reason %q", reason),
			"task %s already landed as %.10s on %s, but closing it failed: %v", task.ID, p.Commit, target, err)
	}
	return nil
}

// alreadyLanded closes a task whose work is already on the target instead of running it.
func (r *run) alreadyLanded(ctx context.Context, p priorLanding) (RunReport, error) {
	if err := closeLanded(ctx, r.tr, r.pre.task, r.pre.target, p); err != nil {
		return RunReport{}, err
	}
	return RunReport{
		RunID: p.RunID, TaskID: r.pre.task.ID, Title: r.pre.task.Title, Status: StatusAlreadyLanded,
		Message: fmt.Sprintf("already landed as %.10s on %s by run %s; the task is closed, not run again (to redo it: git norma run --force %s)",
			p.Commit, r.pre.target, loop.OrDash(p.RunID), r.pre.task.ID),
		Branch: worktree.TaskBranch(r.pre.task.ID), Target: r.pre.target, Landed: p.Commit,
	}, nil
}

// earlierLanding is the landing of req's task already on the target, unless req's run redoes
// the task on purpose (--force).
func (ld *lander) earlierLanding(ctx context.Context, st *store.Store, req landRequest) (priorLanding, error) {
	run, err := st.Run(ctx, req.runID)
	if err != nil {
		return priorLanding{}, err
	}
	if run.Redo {
		return priorLanding{}, nil
	}
	return ld.landedBefore(ctx, st, req.task, req.target)
}

// adoptLanding makes a landing idempotent: a task whose work is already on the target (a crash
// between the squash commit and its record, a backlog reverted by a stash) is not landed
// again; the run records that landing as its own, and the task is closed with it.
func (ld *lander) adoptLanding(ctx context.Context, st *store.Store, req landRequest, p priorLanding) (string, error) {
	_ = st.SetLanded(ctx, req.runID, p.Commit)
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "already_landed",
		Message: fmt.Sprintf("%s already landed as %.10s on %s by run %s; not landed again", req.task.ID, p.Commit, req.target, loop.OrDash(p.RunID)),
		Data:    map[string]any{"commit": p.Commit, "run": p.RunID, "target": req.target}})
	tr, err := ld.tracker()
	if err == nil {
		err = closeLanded(ctx, tr, req.task, req.target, p)
	}
	return p.Commit, err
}

// LandReport is the outcome of `git norma land`.
type LandReport struct {
	TaskID string   `json:"task_id"`
	RunID  string   `json:"run_id"`
	Target string   `json:"target"`
	Commit string   `json:"landed_commit"`
	Paths  []string `json:"land_conflicts,omitempty"`
	// Refused and Hint say why a landing was refused (exit 3) and what to do about it: a
	// refusal is an outcome too, and `land --json` prints it.
	Refused string `json:"land_error,omitempty"`
	Hint    string `json:"land_hint,omitempty"`
}

// LandTask lands a task branch whose head has a recorded PASS (a --no-land run, or one whose
// landing was refused); nothing unverified lands. live hears what the landing waits for.
func (a *App) LandTask(ctx context.Context, taskID string, live loop.LiveFunc) (LandReport, error) {
	// A task not in the backlog is a plain failure (exit 1), not a refused landing (exit 3).
	task, err := a.Backlog().Show(ctx, taskID)
	if err != nil {
		return LandReport{}, err
	}
	target, err := a.targetBranch(ctx)
	if err != nil {
		return LandReport{}, err
	}
	if err := a.checkRemote(ctx); err != nil {
		return LandReport{}, err
	}
	c, err := a.confiner().confinement() // a landing may run the checks again
	if err != nil {
		return LandReport{}, err
	}
	turn, err := namespaceTurn(ctx, c, live, taskID)
	if err != nil {
		return LandReport{}, err
	}
	defer turn()
	// A landing killed while its checks ran left a mark that this landing's guard, which
	// takes what they wrote for how things were, would erase: recorded first, as run and loop
	// do (before the task's lock, which would keep the mark for a landing under way).
	if err := a.Repo.withStore(ctx, func(st *store.Store) error {
		a.Repo.recordEndedUnguarded(ctx, st, a.Now)
		return nil
	}); err != nil {
		return LandReport{}, err
	}
	lock, err := a.Repo.acquireTaskLock(taskID)
	if err != nil {
		return LandReport{}, err
	}
	defer lock.Release()
	st, err := a.Repo.OpenStore(ctx)
	if err != nil {
		return LandReport{}, err
	}
	defer st.Close()
	run, err := a.Repo.passingRun(ctx, st, taskID)
	if err != nil {
		var refused *Error
		if errors.As(err, &refused) && errors.Is(err, ErrLandRefused) {
			return LandReport{TaskID: taskID, Refused: refused.Err.Error(), Hint: refused.Hint}, err
		}
		return LandReport{}, err
	}
	rep := LandReport{TaskID: taskID, RunID: run.ID, Target: target}
	// A run killed while landing may have landed already, and still hold the task's claim.
	if rep.Commit = a.Repo.landingOfRun(ctx, target, taskID, run.ID, run.PassHead); rep.Commit != "" {
		return rep, a.recordLanding(ctx, st, landRequest{runID: run.ID, task: task, target: target}, rep.Commit)
	}
	claimed := a.claimedBy(ctx, run, task)
	rep.Commit, err = a.lander().land(ctx, st, landRequest{runID: run.ID, task: task, target: target, claimedByUs: claimed, live: live})
	var lr *landRefusal
	refused := errors.As(err, &lr)
	if claimed {
		resumeAt := ""
		if refused {
			resumeAt = lr.resumeAt
		}
		a.giveBackClaim(ctx, st, run.ID, taskID, resumeAt)
	}
	if refused {
		rep.Paths, rep.Refused, rep.Hint = lr.paths, lr.Error(), lr.hint
		return rep, &Error{Kind: ErrLandRefused, Err: fmt.Errorf("landing refused: %w", lr), Hint: lr.hint}
	}
	return rep, err
}

// passingRun finds the run whose PASS was recorded on exactly the task branch's current head.
func (r *Repo) passingRun(ctx context.Context, st *store.Store, taskID string) (store.Run, error) {
	branch := worktree.TaskBranch(taskID)
	head, err := r.Git.Resolve(ctx, "refs/heads/"+branch)
	if err != nil {
		return store.Run{}, &Error{Kind: ErrLandRefused, Err: fmt.Errorf("task %s has no branch %s", taskID, branch),
			Hint: "run it first: git norma run " + taskID}
	}
	runs, err := st.RunsForTask(ctx, taskID, 0) // however many checks of the task came since
	if err != nil {
		return store.Run{}, err
	}
	for _, rec := range runs {
		if rec.Status != store.StatusPassed || rec.PassHead != head {
			continue
		}
		if rec.LandedCommit != "" {
			return store.Run{}, &Error{Kind: ErrLandRefused, Err: fmt.Errorf("%s was already landed as %.10s by run %s", branch, rec.LandedCommit, rec.ID)}
		}
		return rec, nil
	}
	return store.Run{}, &Error{Kind: ErrLandRefused,
		Err:  fmt.Errorf("%s (at %.10s) has no recorded PASS: only verified work lands", branch, head),
		Hint: "verify it with: git norma run " + taskID + " --no-land"}
}
