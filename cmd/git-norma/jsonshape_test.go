package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkShape validates v against the documented shape name: every documented key present
// (unless optional), every key present documented, every value of its documented type.
func checkShape(v any, name string) []string {
	shapes, err := jsonShapes()
	if err != nil {
		return []string{err.Error()}
	}
	return checkShapeIn(shapes, v, name)
}

// checkShapeIn checks v against the shape @name of shapes.
func checkShapeIn(shapes map[string]*jsonShape, v any, name string) []string {
	s, ok := shapes[name]
	if !ok {
		return []string{fmt.Sprintf("no shape @%s in doc/json-shapes.txt", name)}
	}
	var errs []string
	checkValue(shapes, s, v, s.rootType(), "", "", &errs)
	return errs
}

// checkValue checks v against typ; prefix is where typ's object fields live in s ("", "runs[].").
func checkValue(shapes map[string]*jsonShape, s *jsonShape, v any, typ, prefix, where string, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, fmt.Sprintf("@%s %s: ", s.name, orText(where, "(root)"))+fmt.Sprintf(format, args...))
	}
	if base, ok := strings.CutSuffix(typ, "|null"); ok {
		if v == nil {
			return
		}
		typ = base
	}
	switch {
	case strings.HasPrefix(typ, "@"):
		ref, ok := shapes[typ[1:]]
		if !ok {
			fail("no shape %s", typ)
			return
		}
		checkValue(shapes, ref, v, ref.rootType(), "", where, errs)
	case strings.HasPrefix(typ, "[") && strings.HasSuffix(typ, "]"):
		arr, ok := v.([]any)
		if !ok {
			fail("want an array, got %s", jsonKind(v))
			return
		}
		for i, e := range arr {
			checkValue(shapes, s, e, typ[1:len(typ)-1], prefix+"[].", fmt.Sprintf("%s[%d]", where, i), errs)
		}
	case typ == "object":
		m, ok := v.(map[string]any)
		if !ok {
			fail("want an object, got %s", jsonKind(v))
			return
		}
		checkObject(shapes, s, m, prefix, where, errs)
	case typ == "any":
	case typ != jsonKind(v):
		fail("want %s, got %s", typ, jsonKind(v))
	}
}

// checkObject checks the documented fields directly under prefix; an object with none is free-form.
func checkObject(shapes map[string]*jsonShape, s *jsonShape, m map[string]any, prefix, where string, errs *[]string) {
	fields := map[string]jsonField{}
	for _, f := range s.fields {
		if rest, ok := strings.CutPrefix(f.path, prefix); ok && f.path != "." && !strings.ContainsAny(rest, ".[") {
			fields[rest] = f
		}
	}
	if len(fields) == 0 {
		return
	}
	dot := func(k string) string { return strings.TrimPrefix(where+"."+k, ".") }
	for _, k := range sortedKeys(fields) {
		f := fields[k]
		v, ok := m[k]
		if !ok {
			if !f.optional {
				*errs = append(*errs, fmt.Sprintf("@%s %s: documented but missing", s.name, dot(k)))
			}
			continue
		}
		childPrefix := prefix + k + "."
		if strings.HasPrefix(strings.TrimSuffix(f.typ, "|null"), "[") {
			childPrefix = prefix + k
		}
		checkValue(shapes, s, v, f.typ, childPrefix, dot(k), errs)
	}
	for k := range m {
		if _, ok := fields[k]; !ok {
			*errs = append(*errs, fmt.Sprintf("@%s %s: not documented in doc/json-shapes.txt", s.name, dot(k)))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// cmdJSONShape checks a file against a documented JSON shape: `jsonshape out.json run`.
func cmdJSONShape(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonshape FILE SHAPE")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &v); err != nil {
		ts.Fatalf("%s does not parse as JSON: %v", args[0], err)
	}
	if errs := checkShape(v, args[1]); len(errs) > 0 {
		ts.Fatalf("%s does not match its documented shape:\n%s", args[0], strings.Join(errs, "\n"))
	}
}

func TestCheckShape(t *testing.T) {
	shapes, err := parseJSONShapes(`
@a: test
x        string
y?       number|null
list     [object]
list[].k string
sub      object
sub.b    bool
free?    object
refs?    [@b]
@b: other
.        [string]
`)
	require.NoError(t, err)
	parse := func(s string) any {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v))
		return v
	}
	assert.Empty(t, checkShapeIn(shapes, parse(`{"x":"a","y":null,"list":[{"k":"v"}],"sub":{"b":true},"free":{"z":1},"refs":[["s"]]}`), "a"))
	assert.Empty(t, checkShapeIn(shapes, parse(`{"x":"a","list":[],"sub":{"b":false}}`), "a"))
	assert.Equal(t, []string{
		"@a list[0].k: want string, got number",
		"@a sub.b: documented but missing",
		"@a x: want string, got number",
		"@a extra: not documented in doc/json-shapes.txt",
	}, checkShapeIn(shapes, parse(`{"x":1,"list":[{"k":2}],"sub":{},"extra":0}`), "a"))
	assert.Equal(t, []string{"@b refs[0][0]: want string, got number"}, checkShapeIn(shapes, parse(`{"x":"","list":[],"sub":{"b":true},"refs":[[1]]}`), "a"))
}

// TestJSONShapesAreReferenced: every shape is shown by some page or used by another shape,
// and every @reference names a shape.
func TestJSONShapesAreReferenced(t *testing.T) {
	shapes, err := jsonShapes()
	require.NoError(t, err)
	used := map[string]bool{}
	for _, s := range shapes {
		for _, f := range s.fields {
			if i := strings.Index(f.typ, "@"); i >= 0 {
				ref := strings.TrimSuffix(strings.TrimSuffix(f.typ[i+1:], "|null"), "]")
				assert.Contains(t, shapes, ref, "@%s %s refers to @%s", s.name, f.path, ref)
				used[ref] = true
			}
		}
	}
	for _, name := range pageShapes(t) {
		assert.Contains(t, shapes, name)
		used[name] = true
	}
	for name := range shapes {
		assert.True(t, used[name], "@%s is neither shown in a page nor used by another shape", name)
	}
	assert.True(t, slices.Contains(pageShapes(t), "notify"), "the notify event is documented in a page")
}

// rootType is the type of the whole value: an object unless "." says otherwise.
func (s *jsonShape) rootType() string {
	for _, f := range s.fields {
		if f.path == "." {
			return f.typ
		}
	}
	return "object"
}
