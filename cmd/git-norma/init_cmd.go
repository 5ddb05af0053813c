package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type initCmd struct {
	DisplayNotes bool `help:"Show the journal notes in plain git log (adds refs/notes/norma to notes.displayRef)."`
	Hooks        bool `help:"Also install git-norma's git hooks (see git norma hooks install)."`
	Beads        bool `help:"Also create a Beads workspace with bd init (refused while changes are staged: bd init commits the whole index)."`
	BeadsHooks   bool `help:"With --beads: let bd install its git hooks (core.hooksPath)."`
	BeadsAgents  bool `help:"With --beads: let bd write AGENTS.md, CLAUDE.md and .claude/."`
	JSON         bool `help:"Print what was created and kept as JSON."`
}

func (c *initCmd) Run(env *Env) error {
	res, err := gitnorma.Init(env.Ctx, env.Dir, gitnorma.InitOptions{DisplayNotes: c.DisplayNotes, Hooks: c.Hooks,
		Beads: c.Beads, BeadsHooks: c.BeadsHooks, BeadsAgents: c.BeadsAgents})
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
	fmt.Fprintln(env.IO.Err, `next: set agents.do in .norma/config.json, add a task (git norma task add "Title" --verify "make test"), then: git norma run <task>`)
	return nil
}
