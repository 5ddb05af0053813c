package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/agent"
	"github.com/git-norma/git-norma/worktree"
)

// StatusReport is `git norma status`: the live run, recent runs and the task branches.
type StatusReport struct {
	// Live is the newest live run (null when none); LiveRuns lists every one.
	Live     *LockHolder  `json:"live"`
	LiveRuns []LockHolder `json:"live_runs"`
	Runs     []RunRow     `json:"runs"`
	Branches []BranchRow  `json:"task_branches"`
	// Violations are the guard violations the user has not cleared (git norma resume).
	Violations []Violation `json:"guard_violations"`
	// Paused is why git norma pause stopped new work ("" when it did not).
	Paused string `json:"paused,omitempty"`
}

// RunRow is one run in the status list.
type RunRow struct {
	ID string `json:"run_id"`
	// Kind is run (a run of the loop) or check (git norma check, recorded as a run).
	Kind       string    `json:"kind"`
	Task       string    `json:"task_id"`
	Goal       string    `json:"goal"`
	Status     string    `json:"status"`
	Verdict    string    `json:"verdict"`
	StopReason string    `json:"stop_reason"`
	Iteration  int       `json:"iteration"`
	Step       int       `json:"current_step_index"`
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	RunDir     string    `json:"run_dir"`
	// ProcessGone marks a run still recorded as running whose process died (killed, or the
	// machine went down): the next run of its task recovers it.
	ProcessGone bool `json:"process_gone,omitempty"`
}

// BranchRow is a task branch and the worktree holding it, if any.
type BranchRow struct {
	Branch   string `json:"branch"`
	Task     string `json:"task_id"`
	Head     string `json:"head"`
	Worktree string `json:"worktree"`
}

// History is what the read-only commands — status, log, logs — read: the run store and run
// directories, the live locks, git's task branches and the notes journal, and the backlog
// for the task a status names.
type History struct {
	repo    *Repo
	now     func() time.Time
	redact  redact.Redactor
	validID func(id string) error
	backlog *Backlog
}

// History is the repository's record of runs, for reading.
func (a *App) History() *History {
	return &History{repo: a.Repo, now: a.Now, redact: a.redact, validID: a.ValidateTaskID, backlog: a.Backlog()}
}

// Status reports recent runs (newest first, at most limit), the live run and task branches.
func (h *History) Status(ctx context.Context, limit int) (StatusReport, error) {
	rep := StatusReport{Runs: []RunRow{}, Branches: []BranchRow{}, LiveRuns: []LockHolder{}, Violations: []Violation{}}
	rep.Paused = h.repo.PauseReason()
	if live := h.repo.LiveRuns(); len(live) > 0 {
		rep.LiveRuns, rep.Live = live, &live[0]
	}
	st, err := h.repo.OpenStore(ctx)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	runs, err := st.RecentRuns(ctx, limit)
	if err != nil {
		return rep, err
	}
	for _, r := range runs {
		rep.Runs = append(rep.Runs, h.runRow(r))
	}
	if pending, err := pendingViolations(ctx, st); err == nil && pending != nil {
		rep.Violations = pending
	}
	rep.Branches, err = h.repo.taskBranches(ctx)
	return rep, err
}

func (h *History) runRow(r store.Run) RunRow {
	end := r.EndedAt
	if end.IsZero() {
		end = h.now()
	}
	row := RunRow{
		ID: r.ID, Kind: r.Kind, Task: r.TaskID, Goal: r.Goal, Status: r.Status, Verdict: r.Verdict, StopReason: r.StopReason,
		Iteration: r.Iteration, Step: r.CurrentStepIndex, Started: r.CreatedAt,
		DurationMS: end.Sub(r.CreatedAt).Milliseconds(), RunDir: r.RunDir,
	}
	if r.Status == store.StatusRunning {
		holder, live := LiveLockHolder(h.repo.TaskLockPath(r.TaskID))
		row.ProcessGone = !live || holder.RunID != r.ID
	}
	return row
}

// taskBranches lists norma/task/* branches with the worktrees that hold them: from the ref
// files in the usual layout (a git process is most of status's cost), else in one git call.
func (r *Repo) taskBranches(ctx context.Context) ([]BranchRow, error) {
	rows := []BranchRow{}
	if branches, ok := git.ReadBranches(r.GitDir, worktree.BranchPrefix); ok {
		for _, b := range branches {
			rows = append(rows, BranchRow{Branch: b.Name, Task: strings.TrimPrefix(b.Name, worktree.BranchPrefix), Head: b.Head, Worktree: b.Worktree})
		}
		return rows, nil
	}
	const format, pattern = "%(refname:short) %(objectname) %(worktreepath)", "refs/heads/" + worktree.BranchPrefix
	out, err := r.Git.ForEachRef(ctx, format, pattern)
	if err != nil && ctx.Err() == nil {
		// %(worktreepath) reads git's worktree bookkeeping, which a run adding a worktree at
		// this moment leaves half made for an instant; status does not wait on the lock.
		time.Sleep(50 * time.Millisecond)
		out, err = r.Git.ForEachRef(ctx, format, pattern)
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.SplitN(line, " ", 3)
		if len(fields) < 2 {
			continue
		}
		row := BranchRow{Branch: fields[0], Task: strings.TrimPrefix(fields[0], worktree.BranchPrefix), Head: fields[1]}
		if len(fields) == 3 {
			row.Worktree = fields[2]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// RunDetail is `git norma status <run>`: the run, its steps and its timeline.
type RunDetail struct {
	Run    RunRow     `json:"run"`
	Steps  []StepRow  `json:"steps"`
	Events []EventRow `json:"events"`
	Landed string     `json:"landed_commit,omitempty"`
	// Failure says why the run's last Check failed, when the run did not pass.
	Failure *loop.Failure `json:"failure,omitempty"`
	// Running is the step under way, while the run runs.
	Running *RunningStep `json:"running,omitempty"`
	// FilesRemoved: the run dir is gone, the run kept only as a record (prune keeps the newest
	// run built on a fork point so, see pruneRun).
	FilesRemoved bool `json:"-"`
}

// RunningStep is a step under way: started, not recorded yet.
type RunningStep struct {
	Index     int       `json:"step_index"`
	Role      string    `json:"role"`
	Started   time.Time `json:"started_at"`
	ElapsedMS int64     `json:"elapsed_ms"`
	// Activity is what its agent does now, from its newest output (see agent.Activity).
	Activity string `json:"activity"`
}

// StepRow is one step of a run.
type StepRow struct {
	Index      int       `json:"step_index"`
	Role       string    `json:"role"`
	Iteration  int       `json:"iteration"`
	Status     string    `json:"status"`
	Dir        string    `json:"step_dir"`
	Started    time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	Summary    string    `json:"summary"`
	// Usage is the model, tokens and cost an agent CLI reported for the step.
	Usage *loop.Usage `json:"usage,omitempty"`
}

// EventRow is one timeline entry.
type EventRow struct {
	Seq     int             `json:"seq"`
	TS      time.Time       `json:"ts"`
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// FindingEvents are the event types `status <run>` lists as findings: what an agent tried that
// the orchestrator undid or overruled.
var FindingEvents = []string{loop.EventChecksEnforced, "verdict_overridden", "close_refused"}

// RunDetail loads one run with its steps and events.
func (h *History) RunDetail(ctx context.Context, runID string) (RunDetail, error) {
	st, err := h.repo.OpenStore(ctx)
	if err != nil {
		return RunDetail{}, err
	}
	defer st.Close()
	r, err := st.Run(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return RunDetail{}, failf("list runs with: git norma status", "no run %s", runID)
	}
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{Run: h.runRow(r), Steps: []StepRow{}, Events: []EventRow{}, Landed: r.LandedCommit}
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return d, err
	}
	for _, s := range steps {
		row := StepRow{Index: s.Index, Role: s.Role, Iteration: s.Iteration, Status: s.Status, Dir: s.Dir, Started: s.StartedAt, Summary: s.Summary}
		if !s.EndedAt.IsZero() {
			row.DurationMS = s.EndedAt.Sub(s.StartedAt).Milliseconds()
		}
		if out, ok := storedOutput(s); ok {
			row.Usage = out.Usage
		}
		d.Steps = append(d.Steps, row)
	}
	events, err := st.Events(ctx, runID)
	if err != nil {
		return d, err
	}
	if r.Status != store.StatusPassed {
		d.Failure = h.redact.Failure(lastFailure(events))
	}
	if r.Status == store.StatusRunning {
		d.Running = h.runningStep(runID)
	} else if _, err := os.Lstat(filepath.Join(h.repo.Root, filepath.FromSlash(r.RunDir))); errors.Is(err, fs.ErrNotExist) {
		d.FilesRemoved = true
	}
	for _, e := range events {
		row := EventRow{Seq: e.Seq, TS: e.TS, Type: e.Type, Message: e.Message}
		if e.DataJSON != "" {
			row.Data = json.RawMessage(e.DataJSON)
		}
		d.Events = append(d.Events, row)
	}
	return d, nil
}

// runningStep is the run's newest step when it has no output.json yet. Its logs directory was
// made when it started and is not touched since (its files are written, not created).
func (h *History) runningStep(runID string) *RunningStep {
	steps := h.repo.Path("runs", runID, "steps")
	dirs := stepDirs(steps)
	if len(dirs) == 0 {
		return nil
	}
	dir := filepath.Join(steps, dirs[len(dirs)-1])
	if _, err := os.Stat(filepath.Join(dir, "output.json")); err == nil {
		return nil
	}
	st, err := os.Stat(filepath.Join(dir, "logs"))
	if err != nil {
		return nil
	}
	index, role, _ := stepOf(dirs[len(dirs)-1])
	return &RunningStep{Index: index, Role: role, Started: st.ModTime().UTC(), ElapsedMS: h.now().Sub(st.ModTime()).Milliseconds(),
		Activity: h.redact.Apply(agent.Activity(filepath.Join(dir, "logs")))}
}

// lastFailure is the Failure of the run's last failed Check (nil when none failed).
func lastFailure(events []store.Event) *loop.Failure {
	for i := len(events) - 1; i >= 0; i-- {
		var f loop.Failure
		if events[i].Type == loop.FailureEvent && json.Unmarshal([]byte(events[i].DataJSON), &f) == nil {
			return &f
		}
	}
	return nil
}

// storedOutput is the step's output as the store recorded it with the step (false for a step
// reconciled after a crash or committed before the store kept outputs).
func storedOutput(s store.Step) (loop.Output, bool) {
	var out loop.Output
	return out, s.Output != "" && json.Unmarshal([]byte(s.Output), &out) == nil
}

// TaskRuns lists the runs of one task, newest first.
func (h *History) TaskRuns(ctx context.Context, taskID string, limit int) ([]RunRow, error) {
	if err := h.validID(taskID); err != nil {
		return nil, err
	}
	st, err := h.repo.OpenStore(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs, err := st.RunsForTask(ctx, taskID, limit)
	if err != nil {
		return nil, err
	}
	rows := []RunRow{}
	for _, r := range runs {
		rows = append(rows, h.runRow(r))
	}
	if len(rows) == 0 {
		// No run: a task of the backlog that never ran, or a mistyped id, which must not look
		// like the first.
		if _, err := h.backlog.Show(ctx, taskID); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// NoRunLine is what `status <task>` says of a task with no run in this clone.
func (h *History) NoRunLine(ctx context.Context, taskID string) string {
	t, err := h.backlog.Show(ctx, taskID)
	if err != nil || t.Status == tracker.StatusOpen {
		return fmt.Sprintf("task %s has no run yet; start one with: git norma run %s", taskID, taskID)
	}
	what, hint := noRun(t)
	return what + "; " + hint
}

// noRun says of a task with no run in this clone what to do: run it while it is open. One
// closed or claimed was run elsewhere (another worker, a teammate: `git norma run` would
// refuse it), and its journal travels in refs/notes/norma.
func noRun(t tracker.Task) (what, hint string) {
	if t.Status == tracker.StatusOpen {
		return fmt.Sprintf("task %s has no run", t.ID), "run it with: git norma run " + t.ID
	}
	return fmt.Sprintf("task %s has no run in this clone (it is %s)", t.ID, t.Status),
		"see its runs made in other clones: git norma notes pull origin (or another remote), then: git norma log " + t.ID
}
