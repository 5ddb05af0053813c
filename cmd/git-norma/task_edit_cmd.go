package main

import "github.com/git-norma/git-norma/gitnorma"

type taskCloseCmd struct {
	ID     string `arg:"" help:"Task id."`
	Reason string `help:"Why, for the tracker's history (default: closed by hand)."`
	Force  bool   `help:"Close it even though open tasks block it or its children are not all closed."`
}

func (c *taskCloseCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	note, err := backlog.Close(env.Ctx, c.ID, c.Reason, c.Force)
	if err := env.done(err, "closed %s", c.ID); err != nil {
		return err
	}
	if note != "" {
		env.Progress.Printf("%s", note)
	}
	return nil
}

type taskReopenCmd struct {
	ID string `arg:"" help:"Task id."`
}

func (c *taskReopenCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	note, err := backlog.Reopen(env.Ctx, c.ID)
	if err := env.done(err, "reopened %s", c.ID); err != nil {
		return err
	}
	if note != "" {
		env.Progress.Printf("%s", note)
	}
	return nil
}

// taskLabelCmd groups label add and remove, as bd label does.
type taskLabelCmd struct {
	Add    taskLabelAddCmd    `cmd:"" help:"Add labels to a task."`
	Remove taskLabelRemoveCmd `cmd:"" help:"Remove labels from a task."`
}

type taskLabels struct {
	ID     string   `arg:"" help:"Task id."`
	Labels []string `arg:"" name:"label" help:"The labels."`
}

type taskLabelAddCmd struct{ taskLabels }

func (c *taskLabelAddCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	return env.done(backlog.Label(env.Ctx, c.ID, c.Labels, nil), "labels of %s changed", c.ID)
}

type taskLabelRemoveCmd struct{ taskLabels }

func (c *taskLabelRemoveCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	return env.done(backlog.Label(env.Ctx, c.ID, nil, c.Labels), "labels of %s changed", c.ID)
}

// taskDepCmd groups dependency changes, as bd dep does.
type taskDepCmd struct {
	Add    taskDepAddCmd    `cmd:"" help:"Record that a task depends on another (blocks unless --type says otherwise)."`
	Remove taskDepRemoveCmd `cmd:"" help:"Remove what a task depends on another for."`
}

type taskDep struct {
	ID        string `arg:"" help:"The task that waits."`
	DependsOn string `arg:"" help:"The task it waits for."`
}

type taskDepAddCmd struct {
	taskDep
	Type string `default:"blocks" enum:"blocks,related,discovered-from,waits-for,conditional-blocks" help:"The kind of dependency (${enum})."`
}

func (c *taskDepAddCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	return env.done(backlog.AddDependency(env.Ctx, c.ID, c.DependsOn, c.Type), "%s now depends on %s (%s)", c.ID, c.DependsOn, c.Type)
}

type taskDepRemoveCmd struct{ taskDep }

func (c *taskDepRemoveCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	return env.done(backlog.RemoveDependency(env.Ctx, c.ID, c.DependsOn), "%s no longer depends on %s", c.ID, c.DependsOn)
}

type taskEditCmd struct {
	ID          string  `arg:"" help:"Task id."`
	Title       *string `help:"The new title."`
	Description *string `short:"d" help:"The new description (Objective, Artifact, Verify: the Ready Contract)."`
	Acceptance  *string `short:"a" help:"The new acceptance criteria, one '- [ ] ...' per line."`
	Priority    *int    `short:"p" help:"The new priority, 0 (highest) to 4."`
}

func (c *taskEditCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	edit := gitnorma.TaskEdit{Title: c.Title, Description: c.Description, Acceptance: c.Acceptance, Priority: c.Priority}
	return env.done(backlog.Edit(env.Ctx, c.ID, edit), "edited %s", c.ID)
}
