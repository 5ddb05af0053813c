package main

import (
	"github.com/git-norma/git-norma/gitnorma"
)

type notesPullCmd struct {
	Remote string `arg:"" optional:"" default:"origin" help:"The remote (default origin)."`
}

func (c *notesPullCmd) Run(env *Env, app *gitnorma.App) error {
	pulled, err := app.Repo.PullNotes(env.Ctx, c.Remote)
	if err != nil {
		return err
	}
	if !pulled {
		env.Progress.Printf("%s has no journal yet", c.Remote)
		return nil
	}
	env.Progress.Printf("merged %s's journal into refs/notes/norma", c.Remote)
	return nil
}
