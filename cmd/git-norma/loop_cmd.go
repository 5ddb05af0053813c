package main

import (
	"fmt"
	"time"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/loop"
)

type loopCmd struct {
	MaxTasks      int           `help:"Stop after this many runs (0: until nothing is ready)." default:"0"`
	Parallel      int           `help:"Run up to N independent tasks at once (at most max_parallel)." default:"1" placeholder:"N"`
	ActiveFeature string        `help:"Only run tasks under this feature." placeholder:"ID"`
	ActiveEpic    string        `help:"Only run tasks under this epic." placeholder:"ID"`
	NoLand        bool          `help:"Leave PASSed tasks on their branches for review."`
	JSON          bool          `xor:"format" help:"Print the loop report as JSON."`
	Stream        bool          `name:"json-stream" xor:"format" help:"Print each step as it starts and ends, and each notice, as a JSON line on stdout as it happens; the report is the last line (kind loop_ended)."`
	Force         bool          `help:"Start even while a guard violation is pending (see git norma resume)."`
	Worker        bool          `help:"Wait for work instead of stopping when nothing is ready: look again every --poll, until paused (git norma pause) or interrupted."`
	Poll          time.Duration `help:"How often a --worker looks for ready tasks while it has none." default:"30s"`
	ExitWhenIdle  bool          `help:"With --worker: stop (exit 0) when nothing is ready, as a job that a scheduler starts N times (a Kubernetes Job, a CI matrix) needs."`
	Remote        string        `help:"Land through this git remote (compare-and-swap pushes, retried when another worker landed first), in place of the configured \"remote\"; needs the bd backlog." placeholder:"NAME"`
}

func (c *loopCmd) Run(env *Env) error {
	if c.Parallel < 1 {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("--parallel must be 1 or more")}
	}
	if c.MaxTasks < 0 {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("--max-tasks must be 0 or more")}
	}
	if c.Poll <= 0 {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("--poll must be a duration above zero, such as 30s")}
	}
	var poll time.Duration // a plain loop, or a worker that exits when idle, stops then
	if c.Worker && !c.ExitWhenIdle {
		poll = c.Poll
	}
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	if c.Remote != "" {
		if err := app.UseRemote(env.Ctx, c.Remote); err != nil {
			return err
		}
	}
	live := env.live(c.Parallel > 1)
	var stream *jsonStream
	if c.Stream {
		stream = newJSONStream(env.IO.Out)
		live = stream.live(live)
	}
	rep, err := app.Loop(env.Ctx, gitnorma.LoopOptions{MaxTasks: c.MaxTasks, Parallel: c.Parallel, NoLand: c.NoLand, Force: c.Force, Live: live,
		Scope: gitnorma.Scope{Feature: c.ActiveFeature, Epic: c.ActiveEpic}, Poll: poll})
	if err != nil && len(rep.Runs) == 0 {
		return err
	}
	// A loop an error stopped reports the runs it made too, then the error with its hint.
	var exit error = silentExit(rep.ExitCode)
	if err != nil {
		exit = err
	}
	if stream != nil {
		stream.write(streamEvent{Kind: "loop_ended", Report: rep})
		return exit
	}
	if c.JSON {
		if err := printJSON(env.IO.Out, rep); err != nil {
			return err
		}
		return exit
	}
	w := table(env.IO.Out)
	fmt.Fprintln(w, "TASK\tRUN\tSTATUS\tVERDICT\tLANDED\tMESSAGE")
	for _, r := range rep.Runs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.TaskID, loop.OrDash(r.RunID), r.Status, loop.OrDash(r.Verdict), loop.OrDash(short(r.Landed)), r.Message)
	}
	w.Flush()
	for _, r := range rep.Runs { // the table says why each run stopped, not that it blocked its task
		printBlocked(env.IO.Out, r)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.IO.Out, "loop stopped: %s (%d run(s))\n", rep.Message, len(rep.Runs))
	return exit
}
