package main

import (
	"fmt"
	"strings"
	"sync"
)

// jsonShape is the documented form of one --json output (doc/json-shapes.txt): its fields by
// path, the way the manual prints them and the tests check them.
//
// A field line is "PATH TYPE DESCRIPTION". PATH is dotted; "x[].y" is field y of the objects
// in array x; a trailing "?" marks a key that may be absent; "." is the root when it is not an
// object. TYPE is string, number, bool, object, any, [T] (an array of T), @name (another
// shape), with "|null" when the value may be null. An object without documented fields is
// free-form.
type jsonShape struct {
	name   string
	title  string
	fields []jsonField
}

type jsonField struct {
	path     string
	typ      string
	optional bool
	text     string
}

var jsonShapes = sync.OnceValues(func() (map[string]*jsonShape, error) {
	data, err := docFS.ReadFile("doc/json-shapes.txt")
	if err != nil {
		return nil, err
	}
	return parseJSONShapes(string(data))
})

func parseJSONShapes(text string) (map[string]*jsonShape, error) {
	shapes := map[string]*jsonShape{}
	var cur *jsonShape
	for n, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "@"):
			name, title, _ := strings.Cut(line[1:], ":")
			cur = &jsonShape{name: strings.TrimSpace(name), title: strings.TrimSpace(title)}
			shapes[cur.name] = cur
			continue
		case cur == nil:
			return nil, fmt.Errorf("json-shapes.txt line %d: a field before the first @shape", n+1)
		}
		parts := strings.Fields(line)
		if len(parts) < 2 {
			return nil, fmt.Errorf("json-shapes.txt line %d: want PATH TYPE DESCRIPTION", n+1)
		}
		f := jsonField{path: parts[0], typ: parts[1], text: strings.Join(parts[2:], " ")}
		if strings.HasSuffix(f.path, "?") {
			f.path, f.optional = strings.TrimSuffix(f.path, "?"), true
		}
		cur.fields = append(cur.fields, f)
	}
	return shapes, nil
}

// renderShape is the literal block the manual shows for a shape.
func renderShape(name string) (string, error) {
	shapes, err := jsonShapes()
	if err != nil {
		return "", err
	}
	s, ok := shapes[name]
	if !ok {
		return "", fmt.Errorf("no JSON shape %q in doc/json-shapes.txt", name)
	}
	width := 0
	for _, f := range s.fields {
		width = max(width, len(f.path)+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "@%s: %s\n", s.name, s.title)
	for _, f := range s.fields {
		key := f.path
		if f.optional {
			key += "?"
		}
		b.WriteString(strings.TrimRight(fmt.Sprintf("  %-*s  %-14s %s", width, key, f.typ, f.text), " ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
