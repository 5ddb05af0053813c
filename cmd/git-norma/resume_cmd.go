package main

import (
	"fmt"

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
		fmt.Fprintln(env.IO.Err, "not paused")
		return nil
	}
	fmt.Fprintln(env.IO.Err, "resumed: runs and loops may go on")
	return nil
}
