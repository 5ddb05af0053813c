package main

import (
	"github.com/git-norma/git-norma/gitnorma"
)

type resumeCmd struct{}

func (c *resumeCmd) Run(env *Env) error {
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	was, err := app.Resume()
	if err != nil {
		return err
	}
	if !was {
		env.Progress.Printf("not paused")
		return nil
	}
	env.Progress.Printf("resumed: runs and loops may go on")
	return nil
}
