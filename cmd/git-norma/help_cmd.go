package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-norma/git-norma/gitnorma"
)

type helpCmd struct {
	Topic []string `arg:"" optional:"" help:"A command (run, task add, ...), or config for the configuration file; none for git-norma itself."`
}

func (c *helpCmd) Run(env *Env, app *kong.Application) error {
	return showManual(env, app, strings.Join(c.Topic, " "))
}

// showManual prints a page's text (through git's pager on a terminal).
func showManual(env *Env, app *kong.Application, topic string) error {
	pages, err := manPages(app)
	if err != nil {
		return err
	}
	p := findPage(pages, topic)
	if p == nil {
		var names []string
		for _, p := range pages {
			// The config command's page and the config file's are both "config".
			if name := strings.TrimPrefix(strings.TrimPrefix(p.name, "git-norma-"), "gitnorma-"); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("no manual page for %q", topic),
			Hint: "try one of: " + strings.Join(names[1:], ", ")}
	}
	return pager(env.IO.Out, p.text(80))
}
