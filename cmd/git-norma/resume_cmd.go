package main

import (
	"github.com/git-norma/git-norma/gitnorma"
)

type resumeCmd struct{}

func (c *resumeCmd) Run(env *Env, app *gitnorma.App) error {
	cleared, err := app.ClearViolations(env.Ctx)
	if err != nil {
		return err
	}
	for _, v := range cleared {
		env.Progress.Printf("cleared the guard violation of %s", v.Summary())
	}
	was, err := app.Repo.Resume()
	if err != nil {
		return err
	}
	if !was && len(cleared) > 0 {
		return nil
	}
	if !was {
		env.Progress.Printf("not paused")
		return nil
	}
	env.Progress.Printf("resumed: runs and loops may go on")
	return nil
}
