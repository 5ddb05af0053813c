package main

import "github.com/git-norma/git-norma/gitnorma"

type taskUnblockCmd struct {
	ID string `arg:"" help:"Task id."`
}

func (c *taskUnblockCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	was, err := backlog.Unblock(env.Ctx, c.ID)
	if err != nil {
		return err
	}
	if !was {
		env.Progress.Printf("task %s was not blocked", c.ID)
		return nil
	}
	env.Progress.Printf("unblocked %s: its strike count is 0 and selection takes it again", c.ID)
	return nil
}
