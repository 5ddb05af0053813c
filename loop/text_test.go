package loop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent's words reach your terminal (live lines, task lists, git log): escape sequences
// (a window title, the clipboard through OSC 52, a cleared line) and bidirectional overrides
// are replaced; tabs and line breaks stay, and one line stays one line.
func TestPrintable(t *testing.T) {
	in := "done \x1b]0;PWNED\x07 \x1b]52;c;ZWNobw==\x07 \x1b[2J\tok\nnext \u202egnp.exe\x7f\u0085"
	got := Printable(in)
	assert.NotContains(t, got, "\x1b")
	assert.NotContains(t, got, "\x07")
	assert.NotContains(t, got, "\u202e")
	assert.NotContains(t, got, "\x7f")
	assert.NotContains(t, got, "\u0085")
	assert.Contains(t, got, "\tok\nnext ")
	assert.Equal(t, "done \uFFFD]0;PWNED\uFFFD", strings.SplitN(got, " \uFFFD]52", 2)[0])
	line := OneLine(in, 200)
	assert.NotContains(t, line, "\x1b")
	assert.NotContains(t, line, "\n")
}

// One output files at most MaxNewIssues issues in the backlog: Do's discoveries and a
// DECOMPOSE's children beyond that are a contract violation, not a flood.
func TestValidateLimitsNewIssues(t *testing.T) {
	do := &Output{Status: StatusOK, Summary: Summary{Text: "s"}, Do: &Do{}}
	for i := range MaxNewIssues + 1 {
		do.Do.Discovered = append(do.Do.Discovered, Discovery{Title: strings.Repeat("x", i+1)})
	}
	err := ValidateOutput(RoleDo, "norma-t", do)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "do.discovered lists 51 issues; at most 50")
	do.Do.Discovered = do.Do.Discovered[:MaxNewIssues]
	assert.NoError(t, ValidateOutput(RoleDo, "norma-t", do))

	p := &Plan{TaskID: "norma-t", Outcome: OutcomeDecompose, NextTaskID: "k0"}
	for i := range MaxNewIssues + 1 {
		p.Children = append(p.Children, NewIssue{Key: fmt.Sprint("k", i), Title: "c"})
	}
	err = validateDecompose(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan.children lists 51 issues; at most 50")
}
