package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type notesPullCmd struct {
	Remote string `arg:"" optional:"" default:"origin" help:"The remote (default origin)."`
}

func (c *notesPullCmd) Run(env *Env) error {
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	pulled, err := app.PullNotes(env.Ctx, c.Remote)
	if err != nil {
		return err
	}
	if !pulled {
		fmt.Fprintf(env.IO.Err, "%s has no journal yet\n", c.Remote)
		return nil
	}
	fmt.Fprintf(env.IO.Err, "merged %s's journal into refs/notes/norma\n", c.Remote)
	return nil
}
