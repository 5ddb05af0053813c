package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/loop"
)

type statusCmd struct {
	Target string `arg:"" optional:"" help:"A run id (r-...) for its steps, or a task id for its runs."`
	Limit  int    `short:"n" default:"20" help:"How many recent runs to list (0: all)."`
	JSON   bool   `help:"Print the status as JSON."`
}

func (c *statusCmd) Run(env *Env) error {
	if c.Limit < 0 {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("--limit must be 0 (all runs) or more, not %d", c.Limit)}
	}
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(c.Target, "r-"):
		d, err := app.History().RunDetail(env.Ctx, c.Target)
		if err != nil || c.JSON {
			return jsonOr(env, d, err)
		}
		printRunDetail(env.IO.Out, d)
	case c.Target != "":
		runs, err := app.History().TaskRuns(env.Ctx, c.Target, c.Limit)
		if err != nil || c.JSON {
			return jsonOr(env, runs, err)
		}
		if len(runs) == 0 {
			fmt.Fprintln(env.IO.Out, app.History().NoRunLine(env.Ctx, c.Target))
			return nil
		}
		printRuns(env.IO.Out, runs)
	default:
		rep, err := app.History().Status(env.Ctx, c.Limit)
		if err != nil || c.JSON {
			return jsonOr(env, rep, err)
		}
		printStatus(env.IO.Out, rep)
	}
	return nil
}

func jsonOr(env *Env, v any, err error) error {
	if err != nil {
		return err
	}
	return printJSON(env.IO.Out, v)
}

func printStatus(out io.Writer, rep gitnorma.StatusReport) {
	if rep.Paused != "" {
		fmt.Fprintf(out, "paused: %s\n  runs stop before their next step and loop starts no new task; undo with: git norma resume\n", rep.Paused)
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(out, "guard violation pending: %s\n  no run or loop starts until you clear it: git norma resume\n", v.Summary())
	}
	for _, l := range rep.LiveRuns { // every run going on, parallel ones included
		fmt.Fprintf(out, "live: %s (pid %d on %s, since %s)\n", l.What(), l.PID, l.Host, l.Started.Local().Format("2006-01-02 15:04:05"))
	}
	if len(rep.LiveRuns) > 0 {
		fmt.Fprintln(out)
	}
	if len(rep.Runs) == 0 {
		fmt.Fprintln(out, "no runs yet; start one with: git norma run <task>")
	} else {
		printRuns(out, rep.Runs)
	}
	if len(rep.Branches) > 0 {
		fmt.Fprintln(out)
		w := table(out)
		fmt.Fprintln(w, "TASK BRANCH\tHEAD\tWORKTREE")
		for _, b := range rep.Branches {
			fmt.Fprintf(w, "%s\t%s\t%s\n", b.Branch, short(b.Head), loop.OrDash(b.Worktree))
		}
		w.Flush()
	}
}

func printRuns(out io.Writer, runs []gitnorma.RunRow) {
	w := table(out)
	fmt.Fprintln(w, "RUN\tTASK\tSTATUS\tVERDICT\tITER\tSTARTED\tDURATION")
	for _, r := range runs {
		status := r.Status
		if r.StopReason != "" && r.StopReason != "none" {
			status += " (" + r.StopReason + ")"
		}
		if r.ProcessGone {
			status += " (process gone; its next run or git norma prune recovers it)"
		}
		iter := strconv.Itoa(r.Iteration)
		if r.Kind == "check" {
			iter = "check" // git norma check: no iterations
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Task, status, loop.OrDash(r.Verdict), iter,
			r.Started.Local().Format("2006-01-02 15:04:05"), durationText(r.DurationMS))
	}
	w.Flush()
}

// usageText is "claude sonnet 1.2k/300 tok $0.0123", or "-".
func usageText(u *loop.Usage) string {
	if u == nil {
		return "-"
	}
	s := u.Agent
	if u.Model != "" {
		s += " " + u.Model
	}
	if u.InputTokens+u.OutputTokens > 0 {
		s += fmt.Sprintf(" %d/%d tok", u.InputTokens, u.OutputTokens)
	}
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" $%.4f", u.CostUSD)
	}
	return s
}

func printRunDetail(out io.Writer, d gitnorma.RunDetail) {
	r := d.Run
	fmt.Fprintf(out, "run %s  task %s  %s  verdict %s  iteration %d  %s\n", r.ID, r.Task, r.Status, loop.OrDash(r.Verdict), r.Iteration, durationText(r.DurationMS))
	fmt.Fprintf(out, "goal: %s\n", r.Goal)
	if d.Landed != "" {
		fmt.Fprintf(out, "landed: %s\n", d.Landed)
	}
	fmt.Fprintln(out)
	w := table(out)
	fmt.Fprintln(w, "STEP\tROLE\tITER\tSTATUS\tDURATION\tAGENT\tSUMMARY")
	for _, s := range d.Steps {
		fmt.Fprintf(w, "%03d\t%s\t%d\t%s\t%s\t%s\t%s\n", s.Index, s.Role, s.Iteration, s.Status, durationText(s.DurationMS), usageText(s.Usage), s.Summary)
	}
	w.Flush()
	if r := d.Running; r != nil {
		line := fmt.Sprintf("running: %03d %s (%s)", r.Index, r.Role, durationText(r.ElapsedMS))
		if r.Activity != "" {
			line += " · " + r.Activity
		}
		fmt.Fprintln(out, line)
	}
	for _, e := range d.Events {
		if noticeEvents[e.Type] {
			fmt.Fprintf(out, "%s: %s\n", e.Type, e.Message)
		}
	}
	if d.Failure != nil && len(d.Failure.Failing) > 0 {
		fmt.Fprintf(out, "\nfailed checks (iteration %d):\n", d.Failure.Iteration)
		for _, l := range failureLines(d.Failure, 10, palette(false)) {
			fmt.Fprintln(out, l)
		}
	}
	printFindings(out, d.Events)
	if d.FilesRemoved {
		fmt.Fprintln(out, "\nfiles: removed by git norma prune, which keeps only the run's record")
		return
	}
	fmt.Fprintf(out, "\nfiles: %s\n", r.RunDir)
}

// noticeEvents are the events the run view shows under the steps: what the sandbox did, where
// the fallback guard kept what it replaced, and a task the run blocked.
var noticeEvents = map[string]bool{loop.KilledEvent: true, loop.DeniedEvent: true, loop.TamperedEvent: true, "sandbox_unavailable": true,
	guard.KeptEvent: true, "task_blocked": true}

// printFindings lists the events that record something an agent tried and the orchestrator
// undid, such as a plan that weakened the task's checks.
func printFindings(out io.Writer, events []gitnorma.EventRow) {
	first := true
	for _, e := range events {
		if !slices.Contains(gitnorma.FindingEvents, e.Type) {
			continue
		}
		if first {
			fmt.Fprintln(out, "\nfindings:")
			first = false
		}
		fmt.Fprintf(out, "  %s: %s\n", e.Type, e.Message)
	}
}
