package main

import (
	"fmt"
	"strings"
)

// zshCompletion is the zsh script: the function _git-norma, which zsh's _git calls for
// `git norma <TAB>` and compdef binds to git-norma. It shares the bash script's tables.
func zshCompletion(nodes []compNode) string {
	tables := bashCompletion(nodes)
	tables = tables[strings.Index(tables, "_git_norma_spec() {"):strings.Index(tables, "_git_norma() {")]
	return strings.Replace(zshTemplate, "@TABLES@", tables, 1)
}

// fishCompletion is the fish script: completions for git-norma, which fish's git completion
// uses for `git norma <TAB>` (it completes git-* commands on PATH with their own completions).
func fishCompletion(nodes []compNode) string {
	var spec, kinds strings.Builder
	for _, n := range nodes {
		all, withValue := n.flagWords()
		fmt.Fprintf(&spec, "        case %s\n            set __gn_cmds %s\n            set __gn_flags %s\n            set __gn_vflags %s\n            set __gn_args %s\n",
			fishQuote(n.path), fishWords(n.cmds), fishWords(all), fishWords(withValue), fishWords(n.args))
		for _, f := range n.flags {
			if f.kind == "" {
				continue
			}
			keys := []string{fishQuote(n.path + " " + f.long)}
			if f.short != "" {
				keys = append(keys, fishQuote(n.path+" "+f.short))
			}
			fmt.Fprintf(&kinds, "        case %s\n            echo %s\n", strings.Join(keys, " "), f.kind)
		}
	}
	globals, _ := nodes[0].flagWords()
	return strings.NewReplacer("@SPEC@", spec.String(), "@KINDS@", kinds.String(),
		"@GLOBALS@", fishWords(append(globals, "--help"))).Replace(fishTemplate)
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func fishWords(ws []string) string {
	var q []string
	for _, w := range ws {
		q = append(q, fishQuote(w))
	}
	return strings.Join(q, " ")
}
