package loop

import (
	"fmt"
	"path/filepath"
	"strings"
)

// writeSummary keeps norma.md (spec layout: goal, criteria, budgets) current: written at the
// start, after a step that changed the plan, and at the end with the outcome. Most steps change
// neither, and leave the file alone.
func (e *engine) writeSummary(res *Result) error {
	text := runSummary(e.o, e.plan, res)
	if text == e.summary {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(e.o.RunDir, "norma.md"), []byte(text)); err != nil {
		return err
	}
	e.summary = text
	return nil
}

// runSummary is norma.md: the goal, the (effective) criteria, the budgets and the outcome.
func runSummary(o Options, plan *Plan, res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Run %s\n\n**Task:** %s — %s\n\n", o.RunID, o.Task.ID, o.Task.Title)
	goal := o.Task.Title
	if plan != nil {
		goal = plan.Goal
	}
	fmt.Fprintf(&b, "## Goal\n\n%s\n\n## Acceptance criteria\n\n", goal)
	if plan != nil {
		for _, ac := range plan.AcceptanceCriteria.Effective {
			fmt.Fprintf(&b, "- **%s** (%s) %s\n", ac.ID, ac.Origin, ac.Text)
			for _, c := range ac.Checks {
				fmt.Fprintf(&b, "  - `%s`\n", c.Cmd)
			}
		}
	} else {
		for _, ac := range o.Task.AcceptanceCriteria {
			fmt.Fprintf(&b, "- **%s** %s\n", ac.ID, ac.Text)
		}
		for _, c := range o.Task.VerifyCommands {
			fmt.Fprintf(&b, "- verify: `%s`\n", c)
		}
	}
	bu := o.Budgets
	fmt.Fprintf(&b, "\n## Budgets\n\n- max_iterations: %d\n- max_wall_time_minutes: %d\n- max_failed_checks: %d\n- max_patch_kb: %d\n",
		bu.MaxIterations, bu.MaxWallTimeMinutes, bu.MaxFailedChecks, bu.MaxPatchKB)
	if res != nil {
		fmt.Fprintf(&b, "\n## Outcome\n\n- status: %s\n- verdict: %s\n- stop reason: %s\n- iterations: %d, steps: %d\n- %s\n",
			res.Status, OrDash(res.Verdict), OrDash(res.StopReason), res.Iterations, res.LastStep, res.Message)
		writeFailure(&b, res.Failure)
	}
	return b.String()
}

// writeFailure adds why the last Check failed: each failing command, its exit code and the
// tail of its output.
func writeFailure(b *strings.Builder, f *Failure) {
	if f == nil || len(f.Failing) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Failed checks (iteration %d)\n", f.Iteration)
	for _, c := range f.Failing {
		how := fmt.Sprintf("exited %d", c.ExitCode)
		if c.TimedOut {
			how = "timed out"
		}
		fmt.Fprintf(b, "\n- **%s** %s: `%s`\n\n```\n%s\n```\n", c.CheckID, how, c.Cmd, strings.Join(c.Tail(20), "\n"))
	}
	if f.Changes != "" {
		fmt.Fprintf(b, "\nChanged since the previous try:\n\n```\n%s\n```\n", f.Changes)
	}
}
