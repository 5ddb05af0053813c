package main

import (
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// fullModelCommands read the whole command tree (the manual, man pages, completion scripts),
// so they always get it.
var fullModelCommands = map[string]bool{"help": true, "man": true, "completion": true}

// parsed is a command line parsed against a command-line model.
type parsed struct {
	parser  *kong.Kong
	ctx     *kong.Context
	globals func() globalFlags
}

// parseArgs parses args with kong. Building kong's model reflects over every command's flags
// and interpolates every help text — about 1.5 ms of each start, more than some commands take
// (a hook, status) — so a command line that names a command and asks for no help is first
// parsed against a model of the global flags and that one command. Anything that model does
// not parse is parsed again against the whole tree: errors, hints and help read as always.
func parseArgs(args []string, stdio IO) (parsed, error) {
	if target, globals, ok := oneCommandModel(args); ok {
		if p, err := newParser(target, stdio); err == nil {
			if kctx, err := p.Parse(args); err == nil {
				return parsed{p, kctx, globals}, nil
			}
		}
	}
	var cli CLI
	p, err := newParser(&cli, stdio)
	if err != nil {
		return parsed{}, err
	}
	kctx, err := p.Parse(args)
	return parsed{p, kctx, func() globalFlags { return cli.globalFlags }}, err
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

// oneCommandModel returns a struct holding the global flags and the command args name (the
// first argument that is not a flag; the global flags take no value), built from CLI's own
// field so the command keeps its tags. ok is false for help, for commands that need the
// whole tree, and for anything it does not recognise.
func oneCommandModel(args []string) (target any, globals func() globalFlags, ok bool) {
	name := ""
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "--":
			return nil, nil, false
		case name == "" && !strings.HasPrefix(a, "-"):
			name = a
		}
	}
	if name == "" || fullModelCommands[name] {
		return nil, nil, false
	}
	cliType := reflect.TypeFor[CLI]()
	for i := range cliType.NumField() {
		f := cliType.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); !isCmd || strings.ToLower(f.Name) != name ||
			hasTag(f.Tag, "name") || hasTag(f.Tag, "aliases") {
			continue
		}
		one := reflect.New(reflect.StructOf([]reflect.StructField{
			{Name: "Globals", Type: reflect.TypeFor[globalFlags](), Tag: `embed:""`},
			{Name: f.Name, Type: f.Type, Tag: f.Tag},
		}))
		return one.Interface(), func() globalFlags { return one.Elem().Field(0).Interface().(globalFlags) }, true
	}
	return nil, nil, false
}

func hasTag(tag reflect.StructTag, key string) bool {
	_, ok := tag.Lookup(key)
	return ok
}
