package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

type taskListCmd struct {
	Status string   `help:"Only tasks with this status (open, in_progress, blocked, deferred, closed)."`
	Label  []string `help:"Only tasks with this label (repeatable: all of them)."`
	Ready  bool     `help:"Only tasks ready to work on, as bd ready says (open, not blocked by an open task)."`
	Limit  int      `default:"50" help:"At most this many tasks, as bd list (0: all of them)."`
	JSON   bool     `help:"Print the tasks as a JSON array."`
}

func (c *taskListCmd) Run(env *Env, backlog *gitnorma.Backlog) error {
	tasks, more, err := backlog.Filter(env.Ctx, gitnorma.TaskFilter{Status: c.Status, Labels: c.Label, Ready: c.Ready, Limit: c.Limit})
	if err != nil {
		return err
	}
	if more {
		defer fmt.Fprintf(env.IO.Err, "the first %d shown; list them all with: git norma task list --limit 0\n", c.Limit)
	}
	if c.JSON {
		if tasks == nil {
			tasks = []tracker.Task{}
		}
		return printJSON(env.IO.Out, tasks)
	}
	if len(tasks) == 0 && (c.Status != "" || len(c.Label) > 0 || c.Ready) {
		fmt.Fprintln(env.IO.Err, "no task matches; git norma task list shows them all")
		return nil
	}
	if len(tasks) == 0 {
		fmt.Fprintln(env.IO.Err, `no tasks yet; add one with: git norma task add "Title" --verify "CMD"`)
		return nil
	}
	w := table(env.IO.Out)
	fmt.Fprintln(w, "ID\tSTATUS\tPRI\tTYPE\tTITLE")
	for _, t := range tasks {
		fmt.Fprintf(w, "%s\t%s\tP%d\t%s\t%s\n", t.ID, t.Status, t.Priority, t.IssueType, loop.OneLine(t.Title, 200))
	}
	return w.Flush()
}
