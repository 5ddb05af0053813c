package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/loop"
)

type taskShowCmd struct {
	ID   string `arg:"" help:"Task id."`
	JSON bool   `help:"Print the task record as JSON."`
}

func (c *taskShowCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	t, err := backlog.Show(env.Ctx, c.ID)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, t)
	}
	fmt.Fprint(env.IO.Out, loop.Printable(gitnorma.DescribeTask(t)))
	return nil
}
