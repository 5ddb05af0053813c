package main

import (
	"fmt"

	"github.com/alecthomas/kong"
)

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

func (c *completionCmd) Run(env *Env, app *kong.Application) error {
	nodes := completionModel(app)
	var script string
	switch c.Shell {
	case "bash":
		script = bashCompletion(nodes)
	case "zsh":
		script = zshCompletion(nodes)
	default:
		script = fishCompletion(nodes)
	}
	_, err := fmt.Fprint(env.IO.Out, script)
	return err
}
