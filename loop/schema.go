package loop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Schema returns the published JSON Schema of a role's input or output ("input" |
// "output"), pretty-printed, generated from the Go types. The output schema is in the
// OpenAI-strict subset (every object closed and requiring all its properties, optional
// fields nullable, no free-form maps), so the same schema serves claude --json-schema and
// codex --output-schema. It covers only what an agent produces: the orchestrator fills
// logs, timing, usage, progress links, check evidence and the checked tree.
func Schema(role Role, which string) ([]byte, error) {
	if !slices.Contains(Roles, role) {
		return nil, fmt.Errorf("unknown role %q (want one of %v)", role, Roles)
	}
	var g schemaGen
	var root reflect.Type
	switch which {
	case "output":
		g, root = schemaGen{strict: true, exclude: outputExcluded(role)}, reflect.TypeFor[Output]()
	case "input":
		g, root = schemaGen{exclude: inputExcluded(role)}, reflect.TypeFor[Input]()
	default:
		return nil, fmt.Errorf("unknown schema %q: want input or output", which)
	}
	node, err := g.node(root)
	if err != nil {
		return nil, err
	}
	node.Description = fmt.Sprintf("git-norma %s step %s (spec 7 and 8)", role, which)
	if which == "output" {
		node.Description += ": answer with exactly one JSON object of this shape"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// outputExcluded are the Output fields an agent does not write: the orchestrator's, and the
// other roles' sections.
func outputExcluded(role Role) map[string]bool {
	ex := map[string]bool{"Output.logs": true, "Output.timing": true, "Output.usage": true,
		"Progress.links": true, "Check.evidence": true, "Check.tree": true}
	for _, r := range Roles {
		if r != role {
			ex["Output."+string(r)] = true
		}
	}
	return ex
}

// inputExcluded are the Input sections the engine does not send to the role (conclude.go).
func inputExcluded(role Role) map[string]bool {
	return map[string]bool{
		"Input.plan":     role == RolePlan,
		"Input.do":       role == RolePlan || role == RoleDo,
		"Input.check":    role != RoleAct,
		"Input.evidence": role != RoleCheck,
	}
}

// schemaEnums are the closed value sets, by Go type and JSON field.
var schemaEnums = map[string][]string{
	"Output.status":                 {StatusOK, StatusStop, StatusError},
	"Output.stop_reason":            append([]string{StopNone}, StopReasonsAllowed...),
	"Plan.outcome":                  {OutcomeReady, OutcomeDecompose, OutcomeBlocked},
	"Verdict.status":                {VerdictPass, VerdictFail, VerdictPartial},
	"AcceptanceResult.result":       {VerdictPass, VerdictFail},
	"VerdictBasis.plan_match":       {"MATCH", "MISMATCH"},
	"Act.decision":                  {DecisionClose, DecisionReplan, DecisionRollback, DecisionContinue},
	"StepRef.name":                  {string(RolePlan), string(RoleDo), string(RoleCheck), string(RoleAct)},
	"Paths.workspace_mode":          {"read_only", "read_write"},
	"ProcessNote.severity":          {"warning", "error"},
	"Blocker.suggested_stop_reason": append([]string{StopNone}, StopReasonsAllowed...),
}

// schemaDescriptions document the fields an agent most often gets wrong.
var schemaDescriptions = map[string]string{
	"Output.status":               "ok: the role's work is done and its section is filled; stop: a stop condition applies (set stop_reason); error: you could not do the job",
	"Output.stop_reason":          "none unless status is stop",
	"Output.plan":                 "the plan section; required when status is ok",
	"Output.do":                   "the do section; required when status is ok",
	"Output.check":                "the check section; required when status is ok",
	"Output.act":                  "the act section; required when status is ok",
	"Plan.task_id":                "the task's id from the input",
	"Plan.outcome":                "READY (default): work on this task; DECOMPOSE: create children and name one in next_task_id; BLOCKED: create the prerequisite",
	"Plan.next_task_id":           "DECOMPOSE: the key of one child; BLOCKED: the prerequisite's key",
	"EffectiveCriterion.checks":   "commands run in the workspace; the criterion passes only if every check exits with an expected code",
	"CheckSpec.expect_exit_codes": "usually [0]",
	"CommandRef.exit_code":        "do: the exit code you observed; null in a plan",
	"Do.discovered":               "work found along the way that this iteration must not do; the orchestrator files it",
	"Execution.executed_step_ids": "ids of the plan's do_steps you carried out",
	"Verdict.status":              "FAIL if any acceptance result is FAIL; else PARTIAL if a plan_match list has missing or unexpected ids; else PASS",
	"Act.decision":                "close only when the verdict is PASS; replan when the plan was wrong; rollback to drop this iteration's changes and replan; continue to retry with the same plan",
	"NewIssue.key":                "a name for the new issue inside this answer (next_task_id, blocks); the tracker assigns the id",
	"NewIssue.priority":           "0 (highest) to 4",
}

// schemaGen builds a schema from Go types by reflection.
type schemaGen struct {
	strict  bool
	exclude map[string]bool
}

func (g schemaGen) node(t reflect.Type) (*schemaNode, error) {
	switch t.Kind() {
	case reflect.Pointer:
		return g.node(t.Elem())
	case reflect.Struct:
		return g.object(t)
	case reflect.Slice:
		items, err := g.node(t.Elem())
		return &schemaNode{Type: "array", Items: items}, err
	case reflect.Map, reflect.Interface:
		if g.strict {
			return nil, fmt.Errorf("schema: %s is free-form, which the strict output schema cannot express; exclude the field", t)
		}
		if t.Kind() == reflect.Map {
			return &schemaNode{Type: "object"}, nil
		}
		return &schemaNode{}, nil
	case reflect.String:
		return &schemaNode{Type: "string"}, nil
	case reflect.Bool:
		return &schemaNode{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &schemaNode{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schemaNode{Type: "number"}, nil
	}
	return nil, fmt.Errorf("schema: unsupported type %s", t)
}

func (g schemaGen) object(t reflect.Type) (*schemaNode, error) {
	n := &schemaNode{Type: "object"}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		key := t.Name() + "." + name
		if !f.IsExported() || name == "" || name == "-" || g.exclude[key] {
			continue
		}
		child, err := g.node(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		for _, v := range schemaEnums[key] {
			child.Enum = append(child.Enum, v)
		}
		child.Description = schemaDescriptions[key]
		optional := strings.Contains(opts, "omitempty") || f.Type.Kind() == reflect.Pointer
		switch {
		case g.strict && optional:
			child = nullable(child)
			fallthrough
		case g.strict || !optional:
			n.Required = append(n.Required, name)
		}
		n.Properties = append(n.Properties, schemaProp{name, child})
	}
	if g.strict {
		closed := false
		n.AdditionalProperties = &closed
	}
	return n, nil
}

// nullable is the strict-mode spelling of an optional field: a union with null.
func nullable(n *schemaNode) *schemaNode {
	if n.Type == "object" {
		desc := n.Description
		n.Description = ""
		return &schemaNode{AnyOf: []*schemaNode{n, {Type: "null"}}, Description: desc}
	}
	n.Type = []string{n.Type.(string), "null"}
	if n.Enum != nil {
		n.Enum = append(n.Enum, nil)
	}
	return n
}

// schemaNode is the subset of JSON Schema the generator writes.
type schemaNode struct {
	Type                 any           `json:"type,omitempty"`
	Description          string        `json:"description,omitempty"`
	Enum                 []any         `json:"enum,omitempty"`
	Properties           schemaProps   `json:"properties,omitempty"`
	Required             []string      `json:"required,omitempty"`
	AdditionalProperties *bool         `json:"additionalProperties,omitempty"`
	Items                *schemaNode   `json:"items,omitempty"`
	AnyOf                []*schemaNode `json:"anyOf,omitempty"`
}

// schemaProps keeps the properties in the order of the Go struct.
type schemaProps []schemaProp

type schemaProp struct {
	name string
	node *schemaNode
}

func (p schemaProps) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, prop := range p {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(prop.name)
		v, err := json.Marshal(prop.node)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
