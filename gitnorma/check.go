package gitnorma

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// CheckReport is `git norma check`: a task's effective criteria (its Verify commands and the
// project gates) evaluated in one worktree, with the evidence.
type CheckReport struct {
	RunID    string                  `json:"run_id"`
	TaskID   string                  `json:"task_id"`
	Dir      string                  `json:"dir"`
	Head     string                  `json:"head"`
	Verdict  string                  `json:"verdict"`
	Results  []loop.AcceptanceResult `json:"acceptance_results"`
	Evidence []loop.Evidence         `json:"evidence"`
	Log      string                  `json:"log"`
	// Recorded says the verdict counts for Head (hooks and land look for a recorded PASS): a
	// check of a clean worktree, run on exactly Head's tree in the task's check worktree.
	Recorded bool `json:"recorded"`
	// Tree is the tree id the checks ran on when Recorded.
	Tree string `json:"tree,omitempty"`
}

// Check runs a task's checks in the worktree containing dir — the same built-in Check the loop
// uses. Without a task id it takes the task of the checked-out norma/task/<id> branch.
func (a *App) Check(ctx context.Context, dir, taskID string) (CheckReport, error) {
	return a.check(ctx, dir, taskID, true)
}

// check is Check; guarded says an unconfined recorded check runs under the fallback guard,
// which the post-commit hook's check in the background cannot: the user goes on working
// meanwhile, and the guard would take their commits and edits for the checks' (its PASS is
// a hint all the same: the store is marked as written by unconfined processes).
func (a *App) check(ctx context.Context, dir, taskID string, guarded bool) (CheckReport, error) {
	// A run's workspace or check worktree could point its .git at a repository of an agent's
	// making, whose config (core.fsmonitor, filters) git would run unconfined: refused before
	// any git runs there.
	for _, own := range []string{a.Repo.Path("runs"), a.Repo.Path("checks")} {
		if abs, err := filepath.Abs(dir); err == nil && (contains(own, abs) || contains(resolved(own), resolved(abs))) {
			return CheckReport{}, usagef("check the task's branch from a worktree of yours: git worktree add ../check norma/task/<task>, then git norma check <task> there; or run it: git norma run <task> --no-land",
				"%s is git-norma's (a run's workspace or a check worktree), where an agent's files decide what git runs", dir)
		}
	}
	where, err := a.Repo.Git.In(dir).Where(ctx)
	if err == nil && where.TopLevel == "" {
		err = fmt.Errorf("%s is not in a work tree", dir)
	}
	if err != nil {
		return CheckReport{}, withKind(ErrEnvironment, err)
	}
	top := where.TopLevel
	if taskID == "" {
		branch, _ := a.Repo.Git.In(top).CurrentBranch(ctx)
		taskID = strings.TrimPrefix(branch, worktree.BranchPrefix)
		if taskID == branch || taskID == "" {
			return CheckReport{}, usagef("name the task: git norma check <task>", "this worktree is not on a %s<task> branch", worktree.BranchPrefix)
		}
	}
	task, err := a.Backlog().Show(ctx, taskID)
	if err != nil {
		return CheckReport{}, err
	}
	effective := taskCriteria(a.Config.Gates, task)
	if len(effective) == 0 {
		return CheckReport{}, &Error{Kind: ErrStopped, Err: fmt.Errorf("task %s has nothing to check: no Verify commands and no gates", taskID),
			Hint: "add a `Verify:` line with a command to its description"}
	}
	started := a.Now()
	rep := CheckReport{TaskID: taskID, Dir: top, RunID: newRunID(started)}
	rep.Head, _ = a.Repo.Git.In(top).ResolveCommit(ctx, "HEAD")
	dirty, _ := a.Repo.Git.In(top).TrackedChanges(ctx)
	// A verdict speaks for the task's work only from a clean worktree at its branch's tip.
	tip, _ := a.Repo.Git.ResolveCommit(ctx, "refs/heads/"+worktree.TaskBranch(taskID))
	rep.Recorded = dirty == "" && rep.Head != "" && tip == rep.Head
	if rep.Recorded {
		// Checked in the task's check worktree (under its lock), where nothing but the tree is:
		// files the worktree ignores cannot make the PASS.
		if lock, err := a.Repo.acquireTaskLock(taskID); err != nil {
			rep.Recorded = false // a run of the task is under way: its own Check decides
		} else {
			defer lock.Release()
		}
	}
	logDir := a.Repo.Path("runs", rep.RunID)
	var log *os.File
	if log, rep.Log, err = openChecksLog(logDir); err != nil {
		return rep, err
	}
	defer log.Close()
	// The commit is an agent's: its check commands run its code, confined as in a run.
	cf := a.confiner()
	if !cf.shieldsNow() {
		if err := markUnshieldedIn(ctx, a.Repo, a.Now(), "git norma check of "+taskID+" with its commands unconfined"); err != nil {
			return rep, err
		}
	}
	c, err := cf.confinement()
	if err != nil {
		return rep, err
	}
	turn, err := namespaceTurn(ctx, c, nil, taskID)
	if err != nil {
		return rep, err
	}
	defer turn()
	checks := func() (err error) {
		cctx, done := cf.confineChecksAs(ctx, c, logDir, log)
		defer func() { // what they left running ends before the guard looks
			if derr := done(); derr != nil {
				err = derr
			}
		}()
		if rep.Recorded {
			var ct loop.CheckTree
			ct, rep.Evidence, _, err = checkerOf(a.Repo, a.Config, a.crash).verify(ctx, cctx, taskID, rep.Head, effective, log, rep.Log)
			rep.Tree = ct.Tree
		} else {
			// In your own checkout: what the commands change there is yours.
			rep.Evidence, err = loop.RunChecks(cctx, loop.Checks{Dir: top, Log: log, LogRef: rep.Log, Timeout: time.Duration(a.Config.Agents.Check.Timeout), Env: processEnv()}, effective)
		}
		return err
	}
	created := false
	if guarded && rep.Recorded && !cf.shieldsNow() {
		// Unconfined, the agent's code runs as in a Check step, under the fallback guard. (A
		// check in a worktree of yours runs there, which is yours to judge.)
		created, err = true, a.guardedCheck(ctx, rep, started, checks)
	} else {
		err = checks()
	}
	if err != nil {
		return rep, err
	}
	rep.Results = loop.ResultsFromEvidence(effective, rep.Evidence)
	rep.Verdict = loop.ComputeVerdict(effective, rep.Results, loop.PlanMatch{}).Status
	return rep, a.recordCheck(ctx, rep, started, created)
}

// guardedCheck runs a recorded check's commands under the fallback guard, its run created
// first (the violation is the run's; a check killed meanwhile is a dead run whose guard never
// looked); a violation, or a failure, ends the run stopped.
func (a *App) guardedCheck(ctx context.Context, rep CheckReport, started time.Time, checks func() error) error {
	target, err := a.targetBranch(ctx)
	if err != nil {
		return err
	}
	st, err := a.Repo.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := a.createCheckRun(ctx, st, rep, started); err != nil {
		return err
	}
	run := guardedRun{runID: rep.RunID, taskID: rep.TaskID, target: target, runDir: a.Repo.Path("runs", rep.RunID, "guard")}
	if err = a.lander().guardedChecks(ctx, st, run, checks, "the checks of "+rep.TaskID, "nothing was recorded"); err != nil {
		now := a.Now()
		_ = st.FinishRun(context.WithoutCancel(ctx), rep.RunID, store.StatusStopped, "", "", now, store.Event{TS: now, Type: "check", Message: err.Error()})
	}
	return err
}

func (a *App) createCheckRun(ctx context.Context, st *store.Store, rep CheckReport, started time.Time) error {
	return st.CreateRun(ctx, store.Run{ID: rep.RunID, Kind: store.KindCheck, CreatedAt: started, Goal: "check of " + rep.TaskID + " at " + short10(rep.Head),
		Status: store.StatusRunning, RunDir: filepath.ToSlash(filepath.Join(".norma", "runs", rep.RunID)), TaskID: rep.TaskID, Head: rep.Head}, nil)
}

// taskCriteria are a task's own criteria (its Verify commands) and the project gates: what
// `git norma check` checks, and what a landing re-checks for a run without a plan.
func taskCriteria(gates []loop.Gate, task tracker.Task) []loop.EffectiveCriterion {
	effective := loop.EffectiveCriteria(taskInput(task))
	for _, g := range gates {
		effective = append(effective, loop.GateCriterion(g))
	}
	return effective
}

// recordCheck stores a check as a run of its task (kind check), with the PASS recorded when
// it counts, and notes the result on the checked commit.
// created says its run is in the store already (guardedCheck).
func (a *App) recordCheck(ctx context.Context, rep CheckReport, started time.Time, created bool) error {
	st, err := a.Repo.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := a.Now()
	if !created {
		if err := a.createCheckRun(ctx, st, rep, started); err != nil {
			return err
		}
	}
	status, verdict := store.StatusFailed, "FAIL"
	if rep.Verdict == loop.VerdictPass {
		status, verdict = store.StatusPassed, "PASS"
		if rep.Recorded {
			_ = st.RecordPass(ctx, rep.RunID, rep.Head, rep.Tree)
		}
	}
	summary := fmt.Sprintf("check %s at %s in %s", rep.Verdict, short10(rep.Head), rep.Dir)
	if !rep.Recorded {
		summary += " (not the tip of " + worktree.TaskBranch(rep.TaskID) + ", or uncommitted changes: not a verdict on the task's work)"
	}
	if err := st.FinishRun(ctx, rep.RunID, status, verdict, "", now, store.Event{TS: now, Type: "check", Message: summary}); err != nil {
		return err
	}
	if rep.Recorded {
		_ = a.Repo.NotesJournal().Add(ctx, rep.Head, notes.Entry{TS: notes.Stamp(now), Kind: "check",
			Task: rep.TaskID, Run: rep.RunID, Verdict: rep.Verdict, Summary: a.redact.Apply(summary), Commit: rep.Head})
	}
	return nil
}

func short10(id string) string {
	if len(id) > 10 {
		return id[:10]
	}
	return id
}
