package main

import "github.com/git-norma/git-norma/gitnorma"

type taskAcceptCmd struct {
	IDs []string `arg:"" name:"id" help:"Task ids."`
}

func (c *taskAcceptCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	for _, id := range c.IDs {
		was, err := backlog.Accept(env.Ctx, id)
		if err != nil {
			return err
		}
		if !was {
			env.Progress.Printf("task %s was not waiting for review", id)
			continue
		}
		env.Progress.Printf("accepted %s: selection takes it, and git norma run %s runs it", id, id)
	}
	return nil
}
