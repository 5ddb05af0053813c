package main

import (
	"fmt"

	"github.com/alecthomas/kong"
)

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

// completionScripts are the generators by shell; kong's enum admits no other name.
var completionScripts = map[string]func([]compNode) string{
	"bash": bashCompletion,
	"zsh":  zshCompletion,
	"fish": fishCompletion,
}

func (c *completionCmd) Run(env *Env, app *kong.Application) error {
	_, err := fmt.Fprint(env.IO.Out, completionScripts[c.Shell](completionModel(app)))
	return err
}
