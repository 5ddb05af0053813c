package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type pruneCmd struct {
	KeepLast int  `help:"Keep the newest N runs (default: retention.keep_last)." default:"-1"`
	KeepDays int  `help:"Keep runs younger than N days (default: retention.keep_days)." default:"-1"`
	DryRun   bool `help:"Only say what would be removed."`
	Force    bool `help:"Also delete task branches whose work never landed."`
	JSON     bool `help:"Print the report as JSON."`
}

func (c *pruneCmd) Run(env *Env) error {
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	rep, err := app.Prune(env.Ctx, gitnorma.PruneOptions{KeepLast: c.KeepLast, KeepDays: c.KeepDays, DryRun: c.DryRun, Force: c.Force})
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, rep)
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	for _, r := range rep.Runs {
		fmt.Fprintf(env.IO.Out, "%s run %s\n", verb, r)
	}
	for _, b := range rep.Branches {
		fmt.Fprintf(env.IO.Out, "%s branch %s\n", verb, b)
	}
	for _, k := range rep.Kept {
		env.Progress.Printf("kept %s", k)
	}
	return nil
}
