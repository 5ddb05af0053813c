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
		fmt.Fprintf(&spec, "        case %s\n            set __gn_cmds %s\n            set __gn_flags %s\n            set __gn_vflags %s\n            set __gn_args %s\n",
			fishQuote(n.path), fishWords(n.cmds), fishWords(n.flags), fishWords(n.vflags), fishWords(n.args))
		for _, k := range n.kinds {
			var keys []string
			for _, name := range k.names {
				keys = append(keys, n.path+" "+name)
			}
			fmt.Fprintf(&kinds, "        case %s\n            echo %s\n", fishWords(keys), k.kind)
		}
	}
	return strings.NewReplacer("@SPEC@", spec.String(), "@KINDS@", kinds.String(),
		"@GLOBALS@", fishWords(append(nodes[0].flags, "--help"))).Replace(fishTemplate)
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func fishWords(ws []string) string {
	var q []string
	for _, w := range ws {
		q = append(q, fishQuote(w))
	}
	return strings.Join(q, " ")
}
