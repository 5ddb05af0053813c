package main

import (
	"fmt"
	"strings"
)

// roff renders a page for man(1).
func (p *page) roff(version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH \"%s\" \"%d\" \"\" \"git-norma %s\" \"git-norma Manual\"\n", roffEsc(strings.ToUpper(p.name)), p.section, roffEsc(version))
	b.WriteString(".ad l\n.nh\n")
	fmt.Fprintf(&b, ".SH \"NAME\"\n%s \\- %s\n", roffEsc(p.name), roffInline(p.summary))
	b.WriteString(".SH \"SYNOPSIS\"\n.nf\n")
	for _, s := range p.synopsis {
		for _, l := range synopsisLines(s, 78) {
			b.WriteString(roffLine(roffEsc(l)) + "\n")
		}
	}
	b.WriteString(".fi\n")
	for _, s := range p.sections {
		fmt.Fprintf(&b, ".SH \"%s\"\n", roffEsc(s.title))
		for _, bl := range s.blocks {
			roffBlock(&b, bl)
		}
	}
	return b.String()
}

func roffBlock(b *strings.Builder, bl block) {
	switch bl.kind {
	case blockPara:
		fmt.Fprintf(b, ".PP\n%s\n", roffLine(roffInline(bl.text)))
	case blockSub:
		fmt.Fprintf(b, ".SS \"%s\"\n", roffEsc(bl.text))
	case blockItem:
		fmt.Fprintf(b, ".TP\n%s\n%s\n", roffLine("\\fB"+roffEsc(bl.term)+"\\fR"), roffLine(roffInline(bl.text)))
	case blockLiteral, blockJSON:
		b.WriteString(".PP\n.RS 4\n.nf\n")
		for _, l := range strings.Split(bl.text, "\n") {
			b.WriteString(roffLine(roffEsc(l)) + "\n")
		}
		b.WriteString(".fi\n.RE\n")
	}
}

// roffEsc escapes text for roff: backslashes, and hyphens as \- so that options stay
// copyable ASCII minus signs in man's output.
func roffEsc(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// roffInline escapes text and sets `code` in bold.
func roffInline(s string) string {
	parts := strings.Split(s, "`")
	for i := range parts {
		parts[i] = roffEsc(parts[i])
		if i%2 == 1 {
			parts[i] = `\fB` + parts[i] + `\fR`
		}
	}
	return strings.Join(parts, "")
}

// roffLine keeps a line that starts with . or ' from being read as a request.
func roffLine(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

// text renders a page the way man shows it, for `git norma help` and `--help` without man.
func (p *page) text(width int) string {
	var b strings.Builder
	title := fmt.Sprintf("%s(%d)", strings.ToUpper(p.name), p.section)
	fmt.Fprintf(&b, "%s%s%s\n\n", title, strings.Repeat(" ", max(1, width-2*len(title))), title)
	b.WriteString("NAME\n")
	wrap(&b, p.name+" - "+p.summary, 7, 7, width)
	b.WriteString("\nSYNOPSIS\n")
	for _, s := range p.synopsis {
		for _, l := range synopsisLines(s, width-7) {
			fmt.Fprintf(&b, "       %s\n", l)
		}
	}
	for _, s := range p.sections {
		fmt.Fprintf(&b, "\n%s\n", s.title)
		for i, bl := range s.blocks {
			if i > 0 && bl.kind != blockSub {
				b.WriteString("\n")
			}
			textBlock(&b, bl, width)
		}
	}
	return b.String()
}

func textBlock(b *strings.Builder, bl block, width int) {
	switch bl.kind {
	case blockPara:
		wrap(b, bl.text, 7, 7, width)
	case blockSub:
		fmt.Fprintf(b, "\n   %s\n", bl.text)
	case blockItem:
		wrap(b, bl.term, 7, 11, width)
		wrap(b, bl.text, 11, 11, width)
	case blockLiteral, blockJSON:
		for _, l := range strings.Split(bl.text, "\n") {
			if l != "" {
				l = strings.Repeat(" ", 11) + l
			}
			b.WriteString(l + "\n")
		}
	}
}

// wrap writes text filled to width, the first line indented by first, the others by rest.
func wrap(b *strings.Builder, text string, first, rest, width int) {
	for _, l := range fill(strings.Fields(text), first, rest, width) {
		b.WriteString(l + "\n")
	}
}

// fill breaks words into lines of at most width columns (a longer word keeps a line to
// itself), the first indented by first spaces, the others by rest.
func fill(words []string, first, rest, width int) []string {
	var lines []string
	line, ind := "", first
	for _, w := range words {
		if line != "" && ind+len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, strings.Repeat(" ", ind)+line)
			line, ind = "", rest
		}
		if line == "" {
			line = w
		} else {
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, strings.Repeat(" ", ind)+line)
	}
	return lines
}
