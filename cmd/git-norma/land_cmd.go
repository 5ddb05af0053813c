package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type landCmd struct {
	Task string `arg:"" help:"The task whose branch to land."`
	JSON bool   `help:"Print the outcome as JSON."`
}

func (c *landCmd) Run(env *Env) error {
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	rep, err := app.LandTask(env.Ctx, c.Task)
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
