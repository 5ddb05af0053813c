package main

import (
	"embed"
	"fmt"
	"strings"
)

// docFS holds the hand-written prose of the manual, one file per page (doc/<page>.txt), and
// the JSON shapes (doc/json-shapes.txt). What the kong model already says — synopsis, commands,
// options — is generated, never written here.
//
//go:embed doc/*.txt
var docFS embed.FS

// blockKind is what a block of prose is. The prose format: "# TITLE" starts a section,
// "## Title" a subsection; a blank line ends a paragraph; lines indented by 4 spaces (or a tab)
// are a literal block; a line "term::" starts a definition whose text runs to the next blank
// line; "{{json NAME}}" inserts a JSON shape; `backticks` mark commands and literal words.
type blockKind int

const (
	blockPara blockKind = iota
	blockLiteral
	blockItem
	blockSub
	blockJSON
)

// block is one paragraph, literal block, definition, subsection title or JSON shape (its name
// in term, rendered in text).
type block struct {
	kind blockKind
	term string
	text string
}

// section is one titled part of a page.
type section struct {
	title  string
	blocks []block
}

// prose reads doc/<name>.txt; a page without prose is generated from the model alone.
func prose(name string) ([]section, error) {
	data, err := docFS.ReadFile("doc/" + name + ".txt")
	if err != nil {
		return nil, nil
	}
	secs, err := parseProse(string(data))
	if err != nil {
		return nil, fmt.Errorf("doc/%s.txt: %w", name, err)
	}
	return secs, nil
}

// parseProse turns the prose format into sections.
func parseProse(text string) ([]section, error) {
	var secs []section
	var cur *block
	flush := func() {
		if cur != nil {
			if cur.kind == blockLiteral {
				cur.text = strings.TrimRight(cur.text, "\n")
			}
			secs[len(secs)-1].blocks = append(secs[len(secs)-1].blocks, *cur)
			cur = nil
		}
	}
	for n, line := range strings.Split(text, "\n") {
		literal := strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
		switch {
		case strings.HasPrefix(line, "# "):
			flush()
			secs = append(secs, section{title: strings.TrimSpace(line[2:])})
			continue
		case len(secs) == 0 && strings.TrimSpace(line) != "":
			return nil, fmt.Errorf("line %d: text before the first \"# SECTION\"", n+1)
		case len(secs) == 0:
			continue
		case cur != nil && cur.kind == blockLiteral && (literal || strings.TrimSpace(line) == ""):
			cur.text += strings.TrimPrefix(strings.TrimPrefix(line, "\t"), "    ") + "\n"
			continue
		case strings.TrimSpace(line) == "":
			flush()
			continue
		}
		switch {
		case literal && (cur == nil || cur.kind != blockItem):
			flush()
			cur = &block{kind: blockLiteral, text: strings.TrimPrefix(strings.TrimPrefix(line, "\t"), "    ") + "\n"}
		case strings.HasPrefix(line, "## "):
			flush()
			secs[len(secs)-1].blocks = append(secs[len(secs)-1].blocks, block{kind: blockSub, text: strings.TrimSpace(line[3:])})
		case strings.HasPrefix(line, "{{json ") && strings.HasSuffix(line, "}}"):
			flush()
			name := strings.TrimSpace(line[7 : len(line)-2])
			shape, err := renderShape(name)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			secs[len(secs)-1].blocks = append(secs[len(secs)-1].blocks, block{kind: blockJSON, term: name, text: shape})
		case strings.HasSuffix(line, "::") && !strings.HasPrefix(line, " "):
			flush()
			cur = &block{kind: blockItem, term: strings.TrimSuffix(line, "::")}
		case cur == nil:
			cur = &block{kind: blockPara, text: strings.TrimSpace(line)}
		default:
			cur.text = strings.TrimSpace(cur.text + " " + strings.TrimSpace(line))
		}
	}
	flush()
	return secs, nil
}

// take removes the section titled title from secs and returns it (nil if there is none).
func take(secs *[]section, title string) *section {
	for i, s := range *secs {
		if s.title == title {
			*secs = append((*secs)[:i:i], (*secs)[i+1:]...)
			return &s
		}
	}
	return nil
}
