package main

import (
	"errors"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type landCmd struct {
	Task   string `arg:"" help:"The task whose branch to land."`
	JSON   bool   `help:"Print the outcome as JSON."`
	Remote string `help:"Land through this git remote (compare-and-swap pushes, retried when another worker landed first), in place of the configured \"remote\"; needs the bd backlog." placeholder:"NAME"`
}

func (c *landCmd) Run(env *Env, app *gitnorma.App) error {
	if c.Remote != "" {
		if err := app.UseRemote(env.Ctx, c.Remote); err != nil {
			return err
		}
	}
	rep, err := app.LandTask(env.Ctx, c.Task, env.live(false))
	if c.JSON && errors.Is(err, gitnorma.ErrLandRefused) {
		// A refused landing is an outcome too: scripts get its reason on stdout, and the exit
		// code (3) and message as for any error.
		if perr := printJSON(env.IO.Out, rep); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, rep)
	}
	if rep.Commit == "" {
		fmt.Fprintf(env.IO.Out, "task %s: its branch adds nothing to %s; task closed\n", rep.TaskID, rep.Target)
		return nil
	}
	fmt.Fprintf(env.IO.Out, "landed %s on %s (task %s, verified by run %s)\n", short(rep.Commit), rep.Target, rep.TaskID, rep.RunID)
	return nil
}
