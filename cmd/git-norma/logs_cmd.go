package main

import (
	"github.com/git-norma/git-norma/gitnorma"
)

type logsCmd struct {
	Target string `arg:"" help:"A run id (r-...), or a task id for its newest run."`
	Step   int    `help:"The step's index (the NNN of steps/NNN-role); default: the newest step."`
	Follow bool   `short:"f" help:"Keep printing what is written, step after step, until the run ends (with --step, until that step ends)."`
}

func (c *logsCmd) Run(env *Env, history *gitnorma.History) error {
	return history.Logs(env.Ctx, gitnorma.LogsOptions{Target: c.Target, Step: c.Step, Follow: c.Follow}, env.IO.Out)
}
