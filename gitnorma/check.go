package gitnorma

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// CheckReport is `git norma check`: a task's effective criteria (its Verify commands and the
// project gates) evaluated in one worktree, with the evidence.
type CheckReport struct {
	TaskID   string                  `json:"task_id"`
	Dir      string                  `json:"dir"`
	Head     string                  `json:"head"`
	Verdict  string                  `json:"verdict"`
	Results  []loop.AcceptanceResult `json:"acceptance_results"`
	Evidence []loop.Evidence         `json:"evidence"`
	Log      string                  `json:"log"`
}

// Check runs a task's checks in the worktree containing dir — the same built-in Check the loop
// uses. Without a task id it takes the task of the checked-out norma/task/<id> branch.
func (a *App) Check(ctx context.Context, dir, taskID string) (CheckReport, error) {
	top, err := a.Repo.Git.In(dir).Output(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return CheckReport{}, withCode(ExitFatal, err)
	}
	if taskID == "" {
		branch, _ := a.Repo.Git.In(top).Output(ctx, "symbolic-ref", "-q", "--short", "HEAD")
		taskID = strings.TrimPrefix(branch, worktree.BranchPrefix)
		if taskID == branch || taskID == "" {
			return CheckReport{}, usagef("name the task: git norma check <task>", "this worktree is not on a %s<task> branch", worktree.BranchPrefix)
		}
	}
	task, err := a.ShowTask(ctx, taskID)
	if err != nil {
		return CheckReport{}, err
	}
	effective := loop.EffectiveCriteria(taskInput(task))
	for _, g := range a.Config.Gates {
		effective = append(effective, loop.GateCriterion(g))
	}
	if len(effective) == 0 {
		return CheckReport{}, &Error{Code: ExitStopped, Err: fmt.Errorf("task %s has nothing to check: no Verify commands and no gates", taskID),
			Hint: "add a `Verify:` line with a command to its description"}
	}
	rep := CheckReport{TaskID: taskID, Dir: top}
	rep.Head, _ = a.Repo.Git.In(top).Output(ctx, "rev-parse", "HEAD")
	logDir := a.Repo.Path("checks")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return rep, withCode(ExitFail, err)
	}
	rep.Log = filepath.Join(logDir, fmt.Sprintf("%s-%s.log", taskID, a.Now().UTC().Format("20060102-150405.000")))
	log, err := os.OpenFile(rep.Log, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return rep, withCode(ExitFail, err)
	}
	defer log.Close()
	rep.Evidence, err = loop.RunChecks(ctx, top, effective, log, rep.Log, time.Duration(a.Config.Agents.Check.Timeout))
	if err != nil {
		return rep, withCode(ExitFail, err)
	}
	rep.Results = loop.ResultsFromEvidence(effective, rep.Evidence)
	rep.Verdict = loop.ComputeVerdict(effective, rep.Results, loop.PlanMatch{}).Status
	return rep, nil
}
