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
		fmt.Fprintf(&spec, "\t%q) cmds=%q flags=%q vflags=%q args=%q ;;\n", n.path,
			strings.Join(n.cmds, " "), strings.Join(n.flags, " "), strings.Join(n.vflags, " "), strings.Join(n.args, " "))
		for _, k := range n.kinds {
			var keys []string
			for _, name := range k.names {
				keys = append(keys, fmt.Sprintf("%q", n.path+" "+name))
			}
			fmt.Fprintf(&kinds, "\t%s) echo %q ;;\n", strings.Join(keys, "|"), k.kind)
		}
	}
	return strings.NewReplacer("@SPEC@", spec.String(), "@KINDS@", kinds.String(),
		"@GLOBALS@", strings.Join(append(nodes[0].flags, "--help"), " ")).Replace(bashTemplate)
}
