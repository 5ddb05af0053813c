package gitnorma

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/worktree"
)

// LandReport is the outcome of `git norma land`.
type LandReport struct {
	TaskID string   `json:"task_id"`
	RunID  string   `json:"run_id"`
	Target string   `json:"target"`
	Commit string   `json:"landed_commit"`
	Paths  []string `json:"land_conflicts,omitempty"`
	// Refused and Hint say why a landing was refused (exit 3) and what to do about it.
	Refused string `json:"land_error,omitempty"`
	Hint    string `json:"land_hint,omitempty"`
}

// LandTask lands a task branch whose head has a recorded PASS (a run made with --no-land, or
// one whose landing was refused). Anything else is refused: nothing unverified lands.
func (a *App) LandTask(ctx context.Context, taskID string) (LandReport, error) {
	// A task that is not in the backlog is a plain failure (exit 1, as for run), not a refused
	// landing (exit 3).
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
		return LandReport{}, err
	}
	runID := run.ID
	rep := LandReport{TaskID: taskID, RunID: runID, Target: target}
	// A run killed while landing may have landed already, and still hold the task's claim.
	if rep.Commit = a.Repo.landedBy(ctx, st, runID, target); rep.Commit != "" {
		return rep, a.recordLanding(ctx, st, landRequest{runID: runID, task: task, target: target}, rep.Commit)
	}
	claimed := a.claimedBy(ctx, run, task)
	rep.Commit, err = a.lander().land(ctx, st, landRequest{runID: runID, task: task, target: target, claimedByUs: claimed})
	if claimed {
		a.giveBackClaim(ctx, st, runID, taskID)
	}
	var lr *landRefusal
	if errors.As(err, &lr) {
		rep.Paths = lr.paths
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
	runs, err := st.RunsForTask(ctx, taskID, 20)
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
