package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// helpPrinter is git's split: -h prints concise usage with examples, --help the manual page.
// (`git norma --help` itself never gets here: git turns it into `git help norma`, i.e. man.)
func helpPrinter(opts kong.HelpOptions, ctx *kong.Context) error {
	topic := topCommand(ctx.Selected())
	if manualWanted(ctx.Args) {
		stdio := IO{Out: ctx.Stdout, Err: ctx.Stderr}
		return showManual(&Env{IO: stdio}, ctx.Model, topic)
	}
	if err := kong.DefaultHelpPrinter(opts, ctx); err != nil {
		return err
	}
	return printExamples(ctx.Stdout, ctx.Model, ctx.Selected(), topic)
}

// manualWanted says whether --help (rather than -h) was asked for.
func manualWanted(args []string) bool {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	return slices.Contains(args, "--help")
}

// topCommand names the top-level command a node belongs to ("" for the application).
func topCommand(n *kong.Node) string {
	for n != nil && n.Parent != nil && n.Parent.Type != kong.ApplicationNode {
		n = n.Parent
	}
	if n == nil || n.Type == kong.ApplicationNode {
		return ""
	}
	return n.Name
}

// printExamples adds the examples of the command's manual page that use the command.
func printExamples(w io.Writer, app *kong.Application, sel *kong.Node, topic string) error {
	pages, err := manPages(app)
	if err != nil {
		return err
	}
	prefix := "git norma"
	if topic != "" {
		prefix += " " + sel.Path()
	}
	p := findPage(pages, topic)
	if p == nil {
		return nil // a hidden command (hook) has no page, and no examples
	}
	var lines []string
	for _, s := range p.sections {
		for _, b := range s.blocks {
			if s.title != "EXAMPLES" || b.kind != blockLiteral {
				continue
			}
			for _, l := range strings.Split(b.text, "\n") {
				if strings.HasPrefix(strings.TrimPrefix(l, "$ "), prefix) {
					lines = append(lines, l)
				}
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, l := range lines[:min(len(lines), 8)] {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintf(w, "\nThe manual: %s (or: man %s)\n", strings.TrimSpace("git norma help "+topic), p.name)
	return nil
}

// pager shows text the way git shows long output: through git's pager (core.pager, GIT_PAGER,
// PAGER; less -FRX by default) on a terminal, straight to w otherwise.
func pager(w io.Writer, text string) error {
	if term, ok := fileOf(w); ok && isTerminal(term) {
		prog, err := git.Runner{}.Var(context.Background(), "GIT_PAGER")
		if err == nil && prog != "" && prog != "cat" {
			cmd := exec.Command("sh", "-c", prog)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(text), term, os.Stderr
			cmd.Env = os.Environ()
			if os.Getenv("LESS") == "" {
				cmd.Env = append(cmd.Env, "LESS=FRX")
			}
			if cmd.Run() == nil {
				return nil
			}
		}
	}
	_, err := io.WriteString(w, text)
	return err
}

// usageOf names the command a parse error is about, for the hint to its -h.
// parseHint is what to do about a command line kong refused: a negative number read as a flag
// (config set retention.keep_days -1) goes after --; anything else, see the command's help.
func parseHint(pe *kong.ParseError, args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if _, err := strconv.ParseFloat(a, 64); err == nil && strings.HasPrefix(a, "-") && strings.Contains(pe.Error(), "unknown flag "+a[:2]) { // -10 is kong's -1
			return fmt.Sprintf("%s is read as a flag; to give it as a value, put -- before the arguments: %s -- …", a, usageOf(pe))
		}
	}
	return "see " + usageOf(pe) + " -h"
}

func usageOf(pe *kong.ParseError) string {
	if pe.Context != nil {
		if sel := pe.Context.Selected(); sel != nil {
			return appName + " " + sel.Path()
		}
	}
	return appName
}
