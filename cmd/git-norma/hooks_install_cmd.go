package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/hooks"
)

type hooksInstallCmd struct {
	Force  bool `help:"Move a hook that is not a shell script aside (<hook>.norma-chained) and chain it."`
	Manual bool `help:"Only print the lines to add to your hooks yourself."`
	JSON   bool `help:"Print what was done as JSON."`
}

func (c *hooksInstallCmd) Run(env *Env) error {
	if c.Manual {
		fmt.Fprint(env.IO.Out, hooks.Manual())
		return nil
	}
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	actions, err := app.Repo.InstallHooks(env.Ctx, c.Force)
	if err != nil {
		if len(actions) > 0 && !c.JSON {
			printActions(env, actions, false) //nolint:errcheck // err is what the command reports
		}
		return err
	}
	return printActions(env, actions, c.JSON)
}

func printActions(env *Env, actions []hooks.Action, asJSON bool) error {
	if asJSON {
		return printJSON(env.IO.Out, actions)
	}
	for _, a := range actions {
		fmt.Fprintf(env.IO.Out, "%-16s %s (%s)\n", a.Hook, a.Result, a.Path)
		if a.Detail != "" {
			fmt.Fprintf(env.IO.Err, "  %s: %s\n", a.Hook, a.Detail)
		}
	}
	return nil
}
