package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type initCmd struct {
	gitnorma.InitOptions
	JSON bool `help:"Print what was created and kept as JSON."`
}

func (c *initCmd) Run(env *Env) error {
	res, err := gitnorma.Init(env.Ctx, env.Dir, c.InitOptions)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, res)
	}
	for _, p := range res.Created {
		fmt.Fprintf(env.IO.Out, "created %s\n", p)
	}
	for _, p := range res.Kept {
		fmt.Fprintf(env.IO.Out, "kept    %s\n", p)
	}
	verb := "Initialized"
	if len(res.Created) == 0 {
		verb = "Reinitialized"
	}
	fmt.Fprintf(env.IO.Out, "%s git-norma in %s/.norma (tasks: %s)\n", verb, res.Root, res.Tracker)
	if res.Chose != "" {
		fmt.Fprintln(env.IO.Err, res.Chose)
	}
	if res.Hint != "" {
		fmt.Fprintln(env.IO.Err, "hint: "+res.Hint)
	}
	next := `add a task (git norma task add "Title" --verify "make test"), then: git norma run <task>`
	if res.NeedsAgent {
		next = "set agents.do in .norma/config.json, " + next
	}
	fmt.Fprintln(env.IO.Err, "next: "+next)
	return nil
}
