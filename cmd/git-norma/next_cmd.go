package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/loop"
)

type nextCmd struct {
	ActiveFeature string `help:"Only consider tasks under this feature." placeholder:"ID"`
	ActiveEpic    string `help:"Only consider tasks under this epic." placeholder:"ID"`
	JSON          bool   `help:"Print the selection as JSON."`
}

func (c *nextCmd) Run(env *Env, app *gitnorma.App) error {
	sel, err := app.Next(env.Ctx, gitnorma.Scope{Feature: c.ActiveFeature, Epic: c.ActiveEpic}, nil, nil)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, sel)
	}
	if sel.TaskID == "" {
		fmt.Fprintln(env.IO.Err, "no ready task: every open leaf task is blocked, claimed, or outside the active scope"+sel.ReviewHint())
		return silentExit(gitnorma.ExitFail)
	}
	fmt.Fprintf(env.IO.Out, "%s\t%s\n", sel.TaskID, loop.OneLine(sel.Title, 200))
	env.Progress.Printf("why: %s", sel.Reason)
	return nil
}
