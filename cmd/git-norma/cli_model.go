package main

import (
	"github.com/alecthomas/kong"
)

// parsed is a command line parsed against the command-line model.
type parsed struct {
	parser  *kong.Kong
	ctx     *kong.Context
	globals globalFlags
}

// parseArgs parses args with kong against the whole command tree.
func parseArgs(args []string, stdio IO) (parsed, error) {
	var cli CLI
	p, err := newParser(&cli, stdio)
	if err != nil {
		return parsed{}, err
	}
	kctx, err := p.Parse(args)
	return parsed{p, kctx, cli.globalFlags}, err
}

func newParser(target any, stdio IO) (*kong.Kong, error) {
	return kong.New(target,
		kong.Name(appName),
		kong.Description(appDescription),
		kong.Writers(stdio.Out, stdio.Err),
		kong.Exit(func(c int) { panic(exitRequest(c)) }),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(helpPrinter),
	)
}
