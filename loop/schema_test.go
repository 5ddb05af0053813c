package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schemaOf(t *testing.T, role Role, which string) map[string]any {
	t.Helper()
	data, err := Schema(role, which)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "{\n  \""), "pretty-printed")
	var s map[string]any
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

// strictKeywords are the JSON Schema keywords the OpenAI-strict subset written here uses.
var strictKeywords = []string{"type", "description", "enum", "properties", "required", "additionalProperties", "items", "anyOf"}

// walkStrict checks one node of an output schema against the OpenAI strict rules: closed
// objects requiring every property, no free-form maps, arrays with items, optional values
// only as unions with null, and a bounded depth.
func walkStrict(s map[string]any, path string, depth int) error {
	if depth > 10 {
		return fmt.Errorf("%s: nested deeper than 10 objects", path)
	}
	for k := range s {
		if !slices.Contains(strictKeywords, k) {
			return fmt.Errorf("%s: keyword %q is outside the strict subset", path, k)
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		if _, typed := s["type"]; typed {
			return fmt.Errorf("%s: anyOf next to type", path)
		}
		for i, b := range anyOf {
			if err := walkStrict(b.(map[string]any), fmt.Sprintf("%s/anyOf/%d", path, i), depth); err != nil {
				return err
			}
		}
		return nil
	}
	types := typeList(s["type"])
	if len(types) == 0 {
		return fmt.Errorf("%s: no type", path)
	}
	for _, typ := range types {
		switch typ {
		case "object":
			if err := strictObject(s, path, depth); err != nil {
				return err
			}
		case "array":
			items, ok := s["items"].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: array without items", path)
			}
			if err := walkStrict(items, path+"/items", depth); err != nil {
				return err
			}
		case "string", "integer", "number", "boolean", "null":
		default:
			return fmt.Errorf("%s: unknown type %q", path, typ)
		}
	}
	if enum, ok := s["enum"].([]any); ok && slices.Contains(types, "null") != slices.Contains(enum, nil) {
		return fmt.Errorf("%s: a nullable enum must list null (and only then)", path)
	}
	return nil
}

func strictObject(s map[string]any, path string, depth int) error {
	props, ok := s["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return fmt.Errorf("%s: object without properties (a free-form map)", path)
	}
	if s["additionalProperties"] != false {
		return fmt.Errorf("%s: additionalProperties is not false", path)
	}
	var names, required []string
	for name := range props {
		names = append(names, name)
	}
	for _, r := range s["required"].([]any) {
		required = append(required, r.(string))
	}
	sort.Strings(names)
	sort.Strings(required)
	if !slices.Equal(names, required) {
		return fmt.Errorf("%s: required %v does not list every property %v", path, required, names)
	}
	for _, name := range names {
		if err := walkStrict(props[name].(map[string]any), path+"/"+name, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func typeList(t any) []string {
	switch v := t.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// validateJSON checks a decoded JSON value against a schema in the subset above: type,
// enum, properties, required, additionalProperties false, items, anyOf.
func validateJSON(s map[string]any, v any, path string) error {
	if anyOf, ok := s["anyOf"].([]any); ok {
		var errs []string
		for _, b := range anyOf {
			err := validateJSON(b.(map[string]any), v, path)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: matches no branch of anyOf (%s)", path, strings.Join(errs, "; "))
	}
	if types := typeList(s["type"]); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return jsonTypeIs(v, t) }) {
		return fmt.Errorf("%s: %v is not of type %v", path, v, types)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := val[r.(string)]; !ok {
				return fmt.Errorf("%s: missing required %q", path, r)
			}
		}
		for k, x := range val {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s: unexpected property %q", path, k)
				}
				continue
			}
			if err := validateJSON(ps, x, path+"/"+k); err != nil {
				return err
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range val {
				if err := validateJSON(items, x, fmt.Sprintf("%s/%d", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func jsonTypeIs(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	}
	return false
}

func TestOutputSchemaIsStrict(t *testing.T) {
	for _, role := range Roles {
		t.Run(string(role), func(t *testing.T) {
			s := schemaOf(t, role, "output")
			assert.Equal(t, "object", s["type"], "the root is an object, not a union")
			require.NoError(t, walkStrict(s, "#", 1))
			assert.ErrorContains(t, walkStrict(schemaOf(t, role, "input"), "#", 1), "additionalProperties is not false", "the walk fails on a non-strict schema")
			props := s["properties"].(map[string]any)
			var names []string
			for name := range props {
				names = append(names, name)
			}
			sort.Strings(names)
			assert.Equal(t, sortedStrings("status", "stop_reason", "summary", "progress", string(role)), names,
				"only what an agent produces: no logs, timing, usage, nor other roles' sections")
			progress := props["progress"].(map[string]any)["properties"].(map[string]any)
			assert.NotContains(t, progress, "links")
			if role == RoleCheck {
				check := props["check"].(map[string]any)["anyOf"].([]any)[0].(map[string]any)["properties"].(map[string]any)
				assert.NotContains(t, check, "evidence", "evidence is the orchestrator's")
			}
		})
	}
}

func sortedStrings(s ...string) []string {
	sort.Strings(s)
	return s
}

// TestSchemaExclusionsAreExplicit: every field of the output types is either in the output
// schema or on the explicit exclusion list, so a new field is a decision, not an accident.
func TestSchemaExclusionsAreExplicit(t *testing.T) {
	excluded := outputExcluded(RolePlan)
	assert.Equal(t, map[string]bool{"Output.logs": true, "Output.timing": true, "Output.usage": true,
		"Progress.links": true, "Check.evidence": true, "Check.tree": true, "Output.do": true, "Output.check": true, "Output.act": true}, excluded)
	for _, role := range Roles {
		g := schemaGen{strict: true, exclude: outputExcluded(role)}
		delete(g.exclude, "Progress.links")
		_, err := g.node(reflect.TypeFor[Output]())
		require.ErrorContains(t, err, "Progress.links", "a map cannot be in the strict schema; its exclusion is needed")
	}
}

func TestAnswersMatchTheOutputSchema(t *testing.T) {
	for _, role := range Roles {
		t.Run(string(role), func(t *testing.T) {
			var v any
			require.NoError(t, json.Unmarshal([]byte(answerText(t, role)), &v))
			assert.NoError(t, validateJSON(schemaOf(t, role, "output"), v, "#"))
			// and it is an output the contract accepts
			answerOutput(t, role)
		})
	}
}

// TestValidateJSONRejects shows the validator can fail: each mutation of a valid answer is
// caught, and the answer of one role does not pass another's schema.
func TestValidateJSONRejects(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{name: "missing property", mutate: func(m map[string]any) { delete(m, "progress") }, want: `missing required "progress"`},
		{name: "extra property", mutate: func(m map[string]any) { m["usage"] = map[string]any{} }, want: `unexpected property "usage"`},
		{name: "bad enum", mutate: func(m map[string]any) { m["status"] = "done" }, want: "is not one of"},
		{name: "wrong type", mutate: func(m map[string]any) { m["summary"] = "did it" }, want: "is not of type"},
		{name: "null where not nullable", mutate: func(m map[string]any) { m["act"].(map[string]any)["rationale"] = nil }, want: "matches no branch"},
		{name: "bad nested enum", mutate: func(m map[string]any) { m["act"].(map[string]any)["decision"] = "maybe" }, want: "matches no branch"},
	}
	s := schemaOf(t, RoleAct, "output")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(answerText(t, RoleAct)), &m))
			tc.mutate(m)
			assert.ErrorContains(t, validateJSON(s, m, "#"), tc.want)
		})
	}
	var plan any
	require.NoError(t, json.Unmarshal([]byte(answerText(t, RolePlan)), &plan))
	assert.ErrorContains(t, validateJSON(s, plan, "#"), `missing required "act"`)
}

// TestInputSchemaDescribesTheInput: the input the engine sends each role validates against
// the published input schema, which lists only what that role receives.
func TestInputSchemaDescribesTheInput(t *testing.T) {
	sections := map[Role][]string{RolePlan: {}, RoleDo: {"plan"}, RoleCheck: {"plan", "do", "evidence"}, RoleAct: {"plan", "do", "check"}}
	agents := map[Role]*scriptedAgent{}
	for _, role := range Roles {
		agents[role] = always(answerOutput(t, role))
	}
	te := newTestEngine(t, agents[RolePlan], agents[RoleDo], agents[RoleCheck], agents[RoleAct])
	te.run(t, context.Background())
	for _, role := range Roles {
		t.Run(string(role), func(t *testing.T) {
			s := schemaOf(t, role, "input")
			reqs := agents[role].requests()
			require.NotEmpty(t, reqs, "the engine asked no %s agent", role)
			in := reqs[0].Input
			if role == RoleCheck {
				require.NotEmpty(t, in.Evidence, "the Check step's input carries the evidence")
			}
			data, err := json.Marshal(in)
			require.NoError(t, err)
			var v any
			require.NoError(t, json.Unmarshal(data, &v))
			assert.NoError(t, validateJSON(s, v, "#"))
			props := s["properties"].(map[string]any)
			for _, section := range []string{"plan", "do", "check", "evidence"} {
				assert.Equal(t, slices.Contains(sections[role], section), props[section] != nil, section)
			}
		})
	}
}

func TestSchemaErrors(t *testing.T) {
	_, err := Schema("review", "output")
	assert.ErrorContains(t, err, `unknown role "review"`)
	_, err = Schema(RolePlan, "request")
	assert.ErrorContains(t, err, `unknown schema "request"`)
}
