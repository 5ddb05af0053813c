package main

import (
	"strings"

	"github.com/git-norma/git-norma/gitnorma"
)

type pauseCmd struct {
	Reason []string `arg:"" optional:"" help:"Why (shown by status and by the runs that stop)."`
}

func (c *pauseCmd) Run(env *Env, app *gitnorma.App) error {
	return env.done(app.Repo.Pause(strings.Join(c.Reason, " ")),
		"paused: runs stop before their next step and loop starts no new task; undo with: git norma resume")
}
