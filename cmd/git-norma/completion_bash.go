package main

import (
	"fmt"
	"strings"
)

// bashCompletion is the bash script: _git_norma is the function git's own completion calls for
// `git norma <TAB>`; the same function completes `git-norma <TAB>`.
func bashCompletion(nodes []compNode) string {
	var spec, kinds strings.Builder
	for _, n := range nodes {
		all, withValue := n.flagWords()
		fmt.Fprintf(&spec, "\t%q) cmds=%q flags=%q vflags=%q args=%q ;;\n", n.path,
			strings.Join(n.cmds, " "), strings.Join(all, " "), strings.Join(withValue, " "), strings.Join(n.args, " "))
		for _, f := range n.flags {
			if f.kind == "" {
				continue
			}
			keys := []string{fmt.Sprintf("%q", n.path+" "+f.long)}
			if f.short != "" {
				keys = append(keys, fmt.Sprintf("%q", n.path+" "+f.short))
			}
			fmt.Fprintf(&kinds, "\t%s) echo %q ;;\n", strings.Join(keys, "|"), f.kind)
		}
	}
	globals, _ := nodes[0].flagWords()
	return strings.NewReplacer("@SPEC@", spec.String(), "@KINDS@", kinds.String(),
		"@GLOBALS@", strings.Join(append(globals, "--help"), " ")).Replace(bashTemplate)
}
