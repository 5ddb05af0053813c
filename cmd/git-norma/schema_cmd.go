package main

import (
	"fmt"

	"github.com/git-norma/git-norma/loop"
)

type schemaCmd struct {
	Role   string `arg:"" enum:"plan,do,check,act" help:"The role: plan, do, check or act."`
	Input  bool   `xor:"which" help:"Print the input schema (what the agent receives on stdin)."`
	Output bool   `xor:"which" help:"Print the output schema (what the agent must print; the default)."`
}

func (c *schemaCmd) Run(env *Env) error {
	which := "output"
	if c.Input {
		which = "input"
	}
	data, err := loop.Schema(loop.Role(c.Role), which)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.IO.Out, string(data))
	return err
}
