package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type logCmd struct {
	Target string `arg:"" help:"A run id (r-...) or a task id."`
	JSON   bool   `help:"Print the entries as a JSON array."`
}

func (c *logCmd) Run(env *Env, history *gitnorma.History) error {
	entries, err := history.Journal(env.Ctx, c.Target)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, entries)
	}
	fmt.Fprint(env.IO.Out, gitnorma.RenderJournal(entries))
	return nil
}
