package main

import (
	"github.com/git-norma/git-norma/gitnorma"
)

type notesPushCmd struct {
	Remote string `arg:"" optional:"" default:"origin" help:"The remote (default origin)."`
}

func (c *notesPushCmd) Run(env *Env, app *gitnorma.App) error {
	return env.done(app.Repo.PushNotes(env.Ctx, c.Remote), "pushed refs/notes/norma to %s", c.Remote)
}
