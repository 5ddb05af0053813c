package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type checkCmd struct {
	Task string `arg:"" optional:"" help:"The task (default: the one whose norma/task/<id> branch is checked out here)."`
	JSON bool   `help:"Print the report as JSON."`
}

func (c *checkCmd) Run(env *Env, app *gitnorma.App) error {
	rep, err := app.Check(env.Ctx, env.Dir, c.Task)
	if err != nil {
		return err
	}
	if c.JSON {
		if err := printJSON(env.IO.Out, rep); err != nil {
			return err
		}
	} else {
		w := table(env.IO.Out)
		for _, r := range rep.Results {
			fmt.Fprintf(w, "%s\t%s\t%s\n", r.ACID, r.Result, r.Notes)
		}
		w.Flush()
		fmt.Fprintf(env.IO.Out, "%s: %s at %s (log: %s)\n", rep.TaskID, rep.Verdict, short(rep.Head), rep.Log)
	}
	if rep.Verdict != "PASS" {
		return silentExit(gitnorma.ExitFail)
	}
	return nil
}
