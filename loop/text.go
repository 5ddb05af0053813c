package loop

// Text helpers for what the engine and the agents print: live lines, journals, messages.

import (
	"strings"
	"unicode"
)

// OneLine shortens text to a single line of at most n runes for live output and journals.
func OneLine(text string, n int) string {
	text = Printable(strings.Join(strings.Fields(text), " "))
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

// Printable is text with every control character (escape sequences that would work a
// terminal: set its title, write the clipboard, move the cursor) and every bidirectional
// override (text that reads other than it is) replaced by U+FFFD; tabs and line breaks stay.
// Agents write titles, summaries and goals that end up on your terminal and in commits.
func Printable(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return '\uFFFD'
		}
		return r
	}, text)
}
