package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-norma/git-norma/gitnorma"
)

// page is one manual page, built from the kong model and the prose, rendered as roff for man
// (doc_render.go) or as text for `git norma help`.
type page struct {
	name     string // git-norma-run
	section  int    // 1 or 5
	summary  string // the NAME line's description
	synopsis []string
	sections []section
}

// ref is how pages cite each other: git-norma-run(1).
func (p *page) ref() string { return fmt.Sprintf("%s(%d)", p.name, p.section) }

// configPage is the name of the configuration file's page.
const configPage = "gitnorma-config"

// manPages builds every page: git-norma(1), one per visible command, gitnorma-config(5).
func manPages(app *kong.Application) ([]*page, error) {
	root, err := rootPage(app)
	if err != nil {
		return nil, err
	}
	pages := []*page{root}
	for _, cmd := range visibleChildren(app.Node) {
		p, err := commandPage(cmd)
		if err != nil {
			return nil, err
		}
		pages = append(pages, p)
	}
	cfg, err := configManPage()
	if err != nil {
		return nil, err
	}
	return append(pages, cfg), nil
}

// findPage returns the page of a command path ("run", "task add"), a page name
// ("git-norma-run", "gitnorma-config") or a topic ("config", "git-norma").
func findPage(pages []*page, topic string) *page {
	words := strings.Fields(strings.TrimPrefix(strings.TrimPrefix(topic, "git norma"), "norma"))
	want := "git-norma"
	if len(words) > 0 {
		want = "git-norma-" + words[0]
	}
	switch {
	case topic == "config" || topic == configPage || topic == "norma-config":
		want = configPage
	case strings.HasPrefix(topic, "git-norma"):
		want = topic
	}
	if i := slices.IndexFunc(pages, func(p *page) bool { return p.name == want }); i >= 0 {
		return pages[i]
	}
	return nil
}

// visibleChildren are n's commands that are not hidden.
func visibleChildren(n *kong.Node) []*kong.Node {
	return slices.DeleteFunc(slices.Clone(n.Children), func(c *kong.Node) bool {
		return c.Type != kong.CommandNode || c.Hidden
	})
}

// leaves are the runnable commands under (and including) n.
func leaves(n *kong.Node) []*kong.Node {
	kids := visibleChildren(n)
	if len(kids) == 0 {
		return []*kong.Node{n}
	}
	var out []*kong.Node
	for _, k := range kids {
		out = append(out, leaves(k)...)
	}
	return out
}

func rootPage(app *kong.Application) (*page, error) {
	secs, err := prose("git-norma")
	if err != nil {
		return nil, err
	}
	p := &page{name: "git-norma", section: 1, summary: strings.TrimSuffix(appDescription, "."),
		synopsis: []string{"git norma [--no-color] [-q | -v] <command> [<args>]", "git norma help [<command>]",
			"git norma <command> -h"}}
	cmds := section{title: "COMMANDS"}
	for _, c := range visibleChildren(app.Node) {
		for _, l := range leaves(c) {
			cmds.blocks = append(cmds.blocks, block{kind: blockItem, term: "git norma " + l.Path(),
				text: l.Help + " See git-norma-" + c.Name + "(1)."})
		}
	}
	opts := section{title: "OPTIONS", blocks: flagItems(app.Node.Flags, true)}
	return p.compose(secs, appDescription, []section{cmds, opts}, true,
		"gitnorma-config(5)", "git(1)", "githooks(5)", "git-worktree(1)", "git-notes(1)"), nil
}

func commandPage(cmd *kong.Node) (*page, error) {
	name := "git-norma-" + cmd.Name
	secs, err := prose(name)
	if err != nil {
		return nil, err
	}
	p := &page{name: name, section: 1, summary: strings.TrimSuffix(cmd.Help, ".")}
	cmds := section{title: "COMMANDS"}
	for _, l := range leaves(cmd) {
		s := synopsis(l)
		p.synopsis = append(p.synopsis, s)
		cmds.blocks = append(cmds.blocks, block{kind: blockItem, term: strings.TrimPrefix(s, "git norma "+cmd.Name+" "), text: l.Help})
	}
	generated := []section{optionsSection(cmd)}
	if len(visibleChildren(cmd)) > 0 {
		generated = append([]section{cmds}, generated...)
	}
	return p.compose(secs, cmd.Help, generated, true, "git-norma(1)", "gitnorma-config(5)"), nil
}

// compose orders a page's sections: the prose's DESCRIPTION (else fallback), the generated
// sections, the rest of the prose, EXIT STATUS when exit is set, and SEE ALSO with refs first.
func (p *page) compose(secs []section, fallback string, generated []section, exit bool, refs ...string) *page {
	desc := section{title: "DESCRIPTION", blocks: []block{{kind: blockPara, text: fallback}}}
	if s := take(&secs, "DESCRIPTION"); s != nil {
		desc = *s
	}
	see := take(&secs, "SEE ALSO")
	p.sections = append(append([]section{desc}, generated...), secs...)
	if exit {
		p.sections = append(p.sections, exitStatus())
	}
	p.sections = append(p.sections, seeAlso(see, refs...))
	return p
}

// synopsis is a leaf command's usage line: git norma task add [-d TEXT] ... <title>.
func synopsis(n *kong.Node) string {
	parts := []string{"git norma " + n.Path()}
	for _, f := range n.Flags {
		if f.Hidden {
			continue
		}
		parts = append(parts, "["+flagUsage(f)+"]")
	}
	for _, a := range n.Positional {
		s := "<" + a.Name + ">"
		if a.IsCumulative() {
			s += "..."
		}
		if !a.Required {
			s = "[" + s + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// flagUsage is "--type=TYPE" or "-q" style, as short as git's synopses.
func flagUsage(f *kong.Flag) string {
	name := "--" + f.Name
	if f.Short != 0 {
		name = fmt.Sprintf("-%c", f.Short)
	}
	if f.IsBool() {
		return name
	}
	if f.Short != 0 {
		return name + " " + placeholder(f)
	}
	return name + "=" + placeholder(f)
}

func placeholder(f *kong.Flag) string {
	if f.PlaceHolder != "" {
		return f.PlaceHolder
	}
	if f.Enum != "" {
		return "(" + strings.ReplaceAll(f.Enum, ",", "|") + ")"
	}
	return strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// optionsSection lists a command's arguments and flags; a command group, each subcommand's.
func optionsSection(cmd *kong.Node) section {
	s := section{title: "OPTIONS"}
	group := len(visibleChildren(cmd)) > 0
	for _, l := range leaves(cmd) {
		var items []block
		for _, a := range l.Positional {
			if a.Help != "" {
				items = append(items, block{kind: blockItem, term: "<" + a.Name + ">", text: a.Help})
			}
		}
		items = append(items, flagItems(l.Flags, false)...)
		if group && len(items) > 0 {
			s.blocks = append(s.blocks, block{kind: blockSub, text: "git norma " + l.Path()})
		}
		s.blocks = append(s.blocks, items...)
	}
	s.blocks = append(s.blocks, block{kind: blockPara, text: "The global options `--no-color`, `-q`/`--quiet`, `-v`/`--verbose` and " +
		"`-h`/`--help` work with every command; see git-norma(1)."})
	return s
}

// synopsisWords splits a usage line at spaces outside brackets: "[-t TYPE]" stays one word.
func synopsisWords(s string) []string {
	var words []string
	depth, start := 0, 0
	for i, r := range s + " " {
		switch {
		case r == '[' || r == '(':
			depth++
		case r == ']' || r == ')':
			depth--
		case r == ' ' && depth == 0:
			if i > start {
				words = append(words, s[start:i])
			}
			start = i + 1
		}
	}
	return words
}

// synopsisLines breaks a usage line at width, continuing under its first argument, as git's
// own synopses do.
func synopsisLines(s string, width int) []string {
	words := synopsisWords(s)
	cont := 0
	for i, w := range words {
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "<") {
			cont = len(strings.Join(words[:i], " ")) + 1
			break
		}
	}
	return fill(words, 0, cont, width)
}

// flagItems describes flags; withHelp adds kong's -h/--help (only the root page lists it).
func flagItems(flags []*kong.Flag, withHelp bool) []block {
	var out []block
	for _, f := range flags {
		if f.Hidden || (f.Name == "help" && !withHelp) {
			continue
		}
		term := "--" + f.Name
		if !f.IsBool() {
			term += "=" + placeholder(f)
		}
		if f.Short != 0 {
			term = fmt.Sprintf("-%c, %s", f.Short, term)
		}
		text := f.Help
		if f.Name == "help" {
			text = "`-h` prints a command's usage with examples; `--help` prints its manual page (the text of `git norma help <command>`). " +
				"`git norma --help` is turned by git into `git help norma`, which opens git-norma(1) with man."
		}
		if f.HasDefault && f.Default != "" && f.Default != "false" && f.Default != "0" && f.Default != "-1" {
			text += fmt.Sprintf(" Default: %s.", f.Default)
		}
		out = append(out, block{kind: blockItem, term: term, text: text})
	}
	return out
}

// exitStatus is the shared EXIT STATUS section (DESIGN.md section 2).
func exitStatus() section {
	item := func(code int, text string) block {
		return block{kind: blockItem, term: fmt.Sprint(code), text: text}
	}
	return section{title: "EXIT STATUS", blocks: []block{
		item(gitnorma.ExitOK, "PASS and landed (or left on its branch with `--no-land`), or the command succeeded."),
		item(gitnorma.ExitFail, "FAIL verdict, a step failed (agent error, invalid output, timeout), or the command failed."),
		item(gitnorma.ExitStopped, "a budget or stop rule ended the run (`budget_exceeded`, `no_progress`, `verify_missing`, ...)."),
		item(gitnorma.ExitLandRefused, "landing refused: a conflict, overlapping local edits, the task is no longer open, or no recorded PASS; or a run refused because open tasks block the task, or its own children are not yet closed (`--force` runs it)."),
		item(gitnorma.ExitFatal, "fatal: not a git repository, not initialised, malformed config, corrupt or newer database, git too old; an agent that cannot run here (bad credentials, its CLI refusing the setup), where every task would fail alike; for `loop`, also the backlog not answering, or a task that could not start (`cannot_start`: the remote not answering)."),
		item(gitnorma.ExitUsage, "usage error, including an invalid task id."),
		item(gitnorma.ExitInterrupted, "interrupted (Ctrl-C or SIGTERM, or SIGHUP: the terminal closed)."),
	}}
}

// seeAlso merges the prose's SEE ALSO references with the standard ones.
func seeAlso(s *section, refs ...string) section {
	if s != nil {
		for _, b := range s.blocks {
			for _, r := range strings.Split(b.text, ",") {
				if r = strings.TrimSpace(r); r != "" && !slices.Contains(refs, r) {
					refs = append(refs, r)
				}
			}
		}
	}
	return section{title: "SEE ALSO", blocks: []block{{kind: blockPara, text: strings.Join(refs, ", ")}}}
}
