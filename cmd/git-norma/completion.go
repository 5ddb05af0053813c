package main

import (
	_ "embed"
	"strings"

	"github.com/alecthomas/kong"
)

// The completion scripts are shell, kept as shell files; the command tables they need are
// generated from the kong model into their @...@ placeholders.
var (
	//go:embed completion/git-norma.bash
	bashTemplate string
	//go:embed completion/git-norma.zsh
	zshTemplate string
	//go:embed completion/git-norma.fish
	fishTemplate string
)

// compNode is what completion needs to know about one command path, taken from the kong model.
type compNode struct {
	path  string // "", "task", "task add"
	cmds  []string
	flags []compFlag
	// args are the kinds of the positionals, in order (the last repeats if it is cumulative).
	args []string
}

// compFlag is one flag; kind is "" for a switch, else what its value completes to.
type compFlag struct {
	long  string
	short string
	kind  string
}

// Value kinds: task ids (git norma task list --json), run ids (git norma status --json), both,
// directories, words (w:a,b,c), or nothing to offer ("free": any text, or file names).
const (
	kindTask   = "task"
	kindTarget = "target"
	kindDir    = "dir"
	kindFree   = "free"
)

// completeKinds says which arguments and flags complete to ids; a test checks every entry
// names an argument or flag of the model.
var completeKinds = map[string]string{
	"run <task>":            kindTask,
	"land <task>":           kindTask,
	"check <task>":          kindTask,
	"task show <id>":        kindTask,
	"task add --parent":     kindTask,
	"next --active-feature": kindTask,
	"next --active-epic":    kindTask,
	"loop --active-feature": kindTask,
	"loop --active-epic":    kindTask,
	"status <target>":       kindTarget,
	"log <target>":          kindTarget,
	"man --install":         kindDir,
}

// completionModel walks the visible commands of the model.
func completionModel(app *kong.Application) []compNode {
	var out []compNode
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		c := compNode{path: path}
		for _, k := range visibleChildren(n) {
			c.cmds = append(c.cmds, k.Name)
		}
		for _, f := range n.Flags {
			if f.Hidden || f.Name == "help" {
				continue
			}
			cf := compFlag{long: "--" + f.Name}
			if f.Short != 0 {
				cf.short = "-" + string(f.Short)
			}
			if !f.IsBool() {
				cf.kind = valueKind(path+" --"+f.Name, f.Enum)
			}
			c.flags = append(c.flags, cf)
		}
		for _, a := range n.Positional {
			c.args = append(c.args, valueKind(path+" <"+a.Name+">", a.Enum))
		}
		if path == "help" {
			c.args = []string{"w:" + strings.Join(append(topNames(app), "config"), ",")}
		}
		if path == "man" {
			c.args = []string{"w:" + strings.Join(append(append([]string{"git-norma"}, topNames(app)...), "config"), ",")}
		}
		out = append(out, c)
		for _, k := range visibleChildren(n) {
			walk(k, strings.TrimSpace(path+" "+k.Name))
		}
	}
	walk(app.Node, "")
	return out
}

func valueKind(key, enum string) string {
	if k, ok := completeKinds[key]; ok {
		return k
	}
	if enum != "" {
		return "w:" + strings.ReplaceAll(enum, " ", "")
	}
	return kindFree
}

func topNames(app *kong.Application) []string {
	var names []string
	for _, c := range visibleChildren(app.Node) {
		names = append(names, c.Name)
	}
	return names
}

// flagWords are a node's flags as offered: switches whole, value flags ending in "=".
func (c compNode) flagWords() (all, withValue []string) {
	for _, f := range c.flags {
		if f.kind == "" {
			all = append(all, f.long)
			continue
		}
		all = append(all, f.long+"=")
		withValue = append(withValue, f.long)
		if f.short != "" {
			withValue = append(withValue, f.short)
		}
	}
	return all, withValue
}
