package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/loop"
)

type runCmd struct {
	Task   string `arg:"" help:"The task to run."`
	NoLand bool   `help:"Leave a PASSed task on its branch for review; land it later with git norma land."`
	Force  bool   `help:"Run (and land) the task even though its work already landed on the target, open tasks block it, its own children are not all closed, or a guard violation is pending (see git norma resume)."`
	JSON   bool   `xor:"format" help:"Print the run report as JSON."`
	Stream bool   `name:"json-stream" xor:"format" help:"Print each step as it starts and ends, and each notice, as a JSON line on stdout as it happens; the report is the last line (kind run_ended)."`
	Remote string `help:"Land through this git remote (compare-and-swap pushes, retried when another worker landed first), in place of the configured \"remote\"; needs the bd backlog." placeholder:"NAME"`
}

func (c *runCmd) Run(env *Env, app *gitnorma.App) error {
	if c.Remote != "" {
		if err := app.UseRemote(env.Ctx, c.Remote); err != nil {
			return err
		}
	}
	live := env.live(false)
	var stream *jsonStream
	if c.Stream {
		stream = newJSONStream(env.IO.Out)
		live = stream.live(live)
	}
	rep, err := app.Run(env.Ctx, gitnorma.RunOptions{TaskID: c.Task, NoLand: c.NoLand, Force: c.Force, Live: live})
	if err != nil {
		return err
	}
	switch {
	case stream != nil:
		stream.write(streamEvent{Kind: "run_ended", TaskID: rep.TaskID, Report: rep})
	case c.JSON:
		if err := printJSON(env.IO.Out, rep); err != nil {
			return err
		}
	default:
		printRunReport(env, rep)
	}
	return silentExit(rep.ExitCode)
}

func printRunReport(env *Env, rep gitnorma.RunReport) {
	out, pal := env.IO.Out, env.Color
	if rep.Status == gitnorma.StatusAlreadyLanded {
		fmt.Fprintf(out, "task %s %s: %s\n", rep.TaskID, pal.status(rep.Status), rep.Message)
		return
	}
	verdict := ""
	if rep.Verdict != "" {
		verdict = " (" + pal.status(rep.Verdict) + ")"
	}
	fmt.Fprintf(out, "run %s: task %s %s%s after %d iteration(s), %d steps, %s\n",
		rep.RunID, rep.TaskID, pal.status(rep.Status), verdict, rep.Iterations, rep.Steps, durationText(rep.DurationMS))
	if rep.Landed == "" { // else the landed line below says it, with what to do next
		fmt.Fprintf(out, "%s\n", rep.Message)
	}
	if rep.Failure != nil && len(rep.Failure.Failing) > 0 {
		fmt.Fprintf(out, "failed checks (iteration %d):\n", rep.Failure.Iteration)
		for _, l := range failureLines(rep.Failure, 10, pal) {
			fmt.Fprintln(out, l)
		}
	}
	printBlocked(out, rep)
	if rep.StopReason == loop.StopGuardViolation {
		fmt.Fprintf(env.IO.Err, "hint: look at what the agent did (git norma status %s); no run or loop starts until you clear it: git norma resume\n", rep.RunID)
	}
	if rep.Landed != "" {
		fmt.Fprintf(out, "landed %s on %s; review with: git show %s\n", short(rep.Landed), rep.Target, short(rep.Landed))
	}
	if rep.LandError != "" {
		fmt.Fprintf(env.IO.Err, "landing refused: %s\n", rep.LandError)
		if len(rep.LandPaths) > 0 {
			fmt.Fprintf(env.IO.Err, "paths: %s\n", strings.Join(rep.LandPaths, ", "))
		}
		if rep.LandHint != "" {
			fmt.Fprintf(env.IO.Err, "hint: %s\n", rep.LandHint)
		}
	}
	if len(rep.Created) > 0 {
		fmt.Fprintf(out, "created: %s\n", strings.Join(rep.Created, ", "))
	}
	if len(rep.Discovered) > 0 {
		fmt.Fprintf(out, "filed discovered work: %s\n", strings.Join(rep.Discovered, ", "))
	}
	if len(rep.Proposed) > 0 {
		fmt.Fprintf(out, "waiting for your review, their Verify lines are the agent's: %s (git norma task show <id>; then git norma task accept <id>...)\n", strings.Join(rep.Proposed, ", "))
	}
	fmt.Fprintf(out, "journal: %s/artifacts/progress.md · steps: git norma status %s · commits: git log %s\n", rep.RunDir, rep.RunID, rep.Branch)
	if rep.Next != nil {
		printRunReport(env, *rep.Next)
	}
}

// printBlocked says that the run blocked its task (three failing runs in a row), and the way
// to give it back; run and loop both say it.
func printBlocked(out io.Writer, rep gitnorma.RunReport) {
	if rep.Blocked != "" {
		fmt.Fprintf(out, "task %s is now blocked: %s; selection skips it until: git norma task unblock %s\n", rep.TaskID, rep.Blocked, rep.TaskID)
	}
}
