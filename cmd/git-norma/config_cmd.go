package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/gitnorma/config"
)

// configCmd reads and changes .norma/config.json by key, as git config does.
type configCmd struct {
	Get  configGetCmd  `cmd:"" help:"Print the value in force of a key (defaults included)."`
	Set  configSetCmd  `cmd:"" help:"Set a key in .norma/config.json; an unknown key or a value it would not load with is refused."`
	List configListCmd `cmd:"" help:"Print every key and the value in force."`
}

type configGetCmd struct {
	Key  string `arg:"" help:"The key, dotted: budgets.max_iterations, agents.do.cmd, ..."`
	JSON bool   `help:"Print the key and its value as JSON."`
}

func (c *configGetCmd) Run(env *Env, app *gitnorma.App) error {
	v, err := gitnorma.ConfigValue(app.Config, c.Key)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, config.Entry{Key: c.Key, Value: v})
	}
	fmt.Fprintln(env.IO.Out, config.ValueText(v))
	return nil
}

type configSetCmd struct {
	Key   string `arg:"" help:"The key, dotted: budgets.max_iterations, agents.do.cmd, ..."`
	Value string `arg:"" help:"The value: as it is for a string or a duration (\"90s\"), else JSON (5, true, [\"go\", \"vet\", \"./...\"])."`
}

func (c *configSetCmd) Run(env *Env, app *gitnorma.App) error {
	cfg, err := app.Repo.SetConfig(c.Key, c.Value)
	if err != nil {
		return err
	}
	v, _ := cfg.Get(c.Key)
	env.Progress.Printf("%s = %s", c.Key, config.ValueText(v))
	return nil
}

type configListCmd struct {
	JSON bool `help:"Print the keys and values as a JSON array."`
}

func (c *configListCmd) Run(env *Env, app *gitnorma.App) error {
	entries := app.Config.Entries()
	if c.JSON {
		return printJSON(env.IO.Out, entries)
	}
	for _, e := range entries {
		fmt.Fprintf(env.IO.Out, "%s=%s\n", e.Key, config.ValueText(e.Value))
	}
	return nil
}
