package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// LoopOptions are the choices of `git norma loop`.
type LoopOptions struct {
	// MaxTasks stops the loop after that many runs (0: until nothing is ready).
	MaxTasks int
	Scope    Scope
	NoLand   bool
	Live     io.Writer
}

// LoopReport is what a loop did, run by run, and why it stopped.
type LoopReport struct {
	Runs []RunReport `json:"runs"`
	// Stopped is nothing_ready, max_tasks, paused or interrupted.
	Stopped  string `json:"stopped"`
	Message  string `json:"message"`
	ExitCode int    `json:"exit_code"`
}

// Loop selects the next ready task, runs it (landing a PASS) and repeats until nothing is
// ready, a pause is requested, MaxTasks runs were made or it is interrupted. A task is tried
// at most once per loop, so a failing task cannot monopolise it.
func (a *App) Loop(ctx context.Context, o LoopOptions) (LoopReport, error) {
	rep := LoopReport{Runs: []RunReport{}}
	var tried []string
	for {
		switch {
		case ctx.Err() != nil:
			return rep.stop("interrupted", "interrupted", ExitInterrupted), nil
		case o.MaxTasks > 0 && len(rep.Runs) >= o.MaxTasks:
			return rep.stop("max_tasks", fmt.Sprintf("ran %d task(s), the --max-tasks limit", len(rep.Runs)), 0), nil
		case a.PauseReason() != "":
			return rep.stop("paused", "paused: "+a.PauseReason(), 0), nil
		}
		sel, err := a.Next(ctx, o.Scope, tried)
		if err != nil {
			return rep, err
		}
		if sel.TaskID == "" {
			return rep.stop("nothing_ready", "no ready task left"+scopeText(sel.Scope), 0), nil
		}
		fmt.Fprintf(o.Live, "loop: task %s %q (%s)\n", sel.TaskID, sel.Title, sel.Reason)
		tried = append(tried, sel.TaskID)
		run, err := a.Run(ctx, RunOptions{TaskID: sel.TaskID, NoLand: o.NoLand, Live: o.Live})
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code == ExitFatal {
				return rep, err
			}
			run = RunReport{TaskID: sel.TaskID, Title: sel.Title, Status: "error", Message: err.Error(), ExitCode: codeOf(err)}
		}
		rep.Runs = append(rep.Runs, run)
		if run.ExitCode == ExitInterrupted {
			return rep.stop("interrupted", "interrupted during "+sel.TaskID, ExitInterrupted), nil
		}
	}
}

// stop finishes the report; the exit code is the worst of the runs' (or code, if worse).
func (r LoopReport) stop(reason, msg string, code int) LoopReport {
	r.Stopped, r.Message, r.ExitCode = reason, msg, code
	for _, run := range r.Runs {
		if run.ExitCode > r.ExitCode {
			r.ExitCode = run.ExitCode
		}
	}
	return r
}

func scopeText(s Scope) string {
	switch {
	case s.Feature != "":
		return " under feature " + s.Feature
	case s.Epic != "":
		return " under epic " + s.Epic
	}
	return ""
}

func codeOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitFail
}
