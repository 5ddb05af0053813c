package main

import "github.com/git-norma/git-norma/gitnorma"

type hooksUninstallCmd struct {
	JSON bool `help:"Print what was done as JSON."`
}

func (c *hooksUninstallCmd) Run(env *Env, app *gitnorma.App) error {
	actions, err := app.Repo.UninstallHooks(env.Ctx)
	if err != nil {
		return err
	}
	return printActions(env, actions, c.JSON)
}
