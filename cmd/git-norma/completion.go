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
	path string // "", "task", "task add"
	cmds []string
	// flags are offered as words: switches whole, value flags ending in "="; vflags are the
	// value flags' long and short names, kinds what each value flag completes to.
	flags, vflags []string
	kinds         []compKind
	// args are the kinds of the positionals, in order (the last repeats if it is cumulative).
	args []string
}

// compKind is what one value flag, by its names ("--parent", "-p"), completes to.
type compKind struct {
	names []string
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
	topics := strings.Join(append(commandNames(app.Node), "config"), ",")
	var out []compNode
	var walk func(n *kong.Node, path string)
	walk = func(n *kong.Node, path string) {
		c := compNode{path: path, cmds: commandNames(n)}
		for _, f := range n.Flags {
			if f.Hidden || f.Name == "help" {
				continue
			}
			long := "--" + f.Name
			if f.IsBool() {
				c.flags = append(c.flags, long)
				continue
			}
			names := []string{long}
			if f.Short != 0 {
				names = append(names, "-"+string(f.Short))
			}
			c.flags = append(c.flags, long+"=")
			c.vflags = append(c.vflags, names...)
			c.kinds = append(c.kinds, compKind{names, valueKind(path+" "+long, f.Enum)})
		}
		for _, a := range n.Positional {
			c.args = append(c.args, valueKind(path+" <"+a.Name+">", a.Enum))
		}
		switch path {
		case "help":
			c.args = []string{"w:" + topics}
		case "man":
			c.args = []string{"w:git-norma," + topics}
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

// commandNames are the names of n's visible subcommands.
func commandNames(n *kong.Node) []string {
	var names []string
	for _, c := range visibleChildren(n) {
		names = append(names, c.Name)
	}
	return names
}
