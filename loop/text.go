package loop

// Text helpers for what the engine and the agents print: live lines, journals, messages.

import "strings"

// OneLine shortens text to a single line of at most n runes for live output and journals.
func OneLine(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}

// Snippet is the start of an agent's answer, one printable line, for an error message.
func Snippet(b []byte) string {
	return OneLine(strings.ToValidUTF8(string(b), "?"), 80)
}

// OrDash is s, or "-" when it is empty: a column that has no value yet.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
