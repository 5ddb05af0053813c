package main

import "github.com/git-norma/git-norma/gitnorma"

type hooksUninstallCmd struct {
	JSON bool `help:"Print what was done as JSON."`
}

// Run needs the repository only: the hooks are the way out of a repository whose .norma/ is
// gone or whose config does not load (the gates' hint), so neither may stop it.
func (c *hooksUninstallCmd) Run(env *Env) error {
	repo, err := gitnorma.OpenRepo(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	actions, err := repo.UninstallHooks(env.Ctx)
	if err != nil {
		return err
	}
	return printActions(env, actions, c.JSON)
}
