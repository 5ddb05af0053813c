package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type taskAddCmd struct {
	Title       string   `arg:"" help:"The task's title (becomes the landing commit's subject)."`
	Description string   `short:"d" help:"What the task is about (Ready Contract: Objective, Artifact, Verify)."`
	Acceptance  string   `short:"a" help:"Acceptance criteria, one per line (\"- [ ] ...\")."`
	Verify      []string `sep:"none" help:"A shell command that proves the task done; repeatable." placeholder:"CMD"`
	Type        string   `short:"t" default:"task" help:"Issue type: task, bug, feature, epic, chore, ..."`
	Priority    int      `short:"p" default:"2" help:"Priority 0 (highest) to 4."`
	Parent      string   `help:"Parent task id; the new task becomes <parent>.<n>."`
	JSON        bool     `help:"Print the new task record as JSON instead of its id."`
}

func (c *taskAddCmd) Run(env *Env) error {
	if c.Priority < 0 || c.Priority > 4 {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("--priority must be 0 to 4, got %d", c.Priority)}
	}
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	t, err := app.Backlog().Add(env.Ctx, gitnorma.TaskSpec{
		Title: c.Title, Description: c.Description, Acceptance: c.Acceptance, Verify: c.Verify,
		Type: c.Type, Priority: c.Priority, Parent: c.Parent,
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, t)
	}
	fmt.Fprintln(env.IO.Out, t.ID)
	return nil
}
