package tracker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// issueWire is the part of bd's JSONL issue record git-norma understands, in bd's field order.
// Dependencies stay raw so records bd wrote keep any dependency fields we do not model.
type issueWire struct {
	Type               string          `json:"_type"`
	ID                 string          `json:"id"`
	Title              string          `json:"title"`
	Description        string          `json:"description,omitempty"`
	Design             string          `json:"design,omitempty"`
	AcceptanceCriteria string          `json:"acceptance_criteria,omitempty"`
	Notes              string          `json:"notes,omitempty"`
	Status             string          `json:"status,omitempty"`
	Priority           int             `json:"priority"`
	IssueType          string          `json:"issue_type,omitempty"`
	Assignee           string          `json:"assignee,omitempty"`
	Owner              string          `json:"owner,omitempty"`
	CreatedAt          time.Time       `json:"created_at,omitzero"`
	CreatedBy          string          `json:"created_by,omitempty"`
	UpdatedAt          time.Time       `json:"updated_at,omitzero"`
	StartedAt          *time.Time      `json:"started_at,omitempty"`
	ClosedAt           *time.Time      `json:"closed_at,omitempty"`
	CloseReason        string          `json:"close_reason,omitempty"`
	Labels             []string        `json:"labels,omitempty"`
	Dependencies       json.RawMessage `json:"dependencies,omitempty"`
}

// depWire is a dependency as bd writes it: the Dependency record of its JSONL and of list,
// ready, update and close ({issue_id, depends_on_id, type, ...}; metadata is a JSON string in
// bd 1.x but is accepted raw), or, from show, the depended-on issue plus dependency_type.
type depWire struct {
	IssueID        string          `json:"issue_id"`
	DependsOnID    string          `json:"depends_on_id"`
	Type           string          `json:"type"`
	CreatedAt      time.Time       `json:"created_at"`
	CreatedBy      string          `json:"created_by"`
	Metadata       json.RawMessage `json:"metadata"`
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	DependencyType string          `json:"dependency_type"`
}

// knownKeys are the issueWire JSON keys; every other key of a record is carried verbatim.
var knownKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[issueWire]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	return keys
}()

// record is one issue line. Unchanged records are written back from their original bytes, so a
// rewrite only touches the lines git-norma actually changed.
type record struct {
	wire  issueWire
	deps  []Dependency
	extra map[string]json.RawMessage
	dirty bool
}

// parseLine decodes one JSONL line. It returns a nil record for lines that are not issues
// (bd writes other _type values, such as memories), which the caller keeps verbatim.
func parseLine(raw []byte) (*record, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, errors.New("not a JSON object")
	}
	if !isIssue(fields) {
		return nil, nil
	}
	r := &record{extra: map[string]json.RawMessage{}}
	if err := json.Unmarshal(raw, &r.wire); err != nil {
		return nil, err
	}
	if r.wire.ID == "" {
		return nil, errors.New("issue record has no id")
	}
	deps, err := decodeDeps(r.wire.ID, r.wire.Dependencies, false)
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	r.deps = deps
	for k, v := range fields {
		if !knownKeys[k] {
			r.extra[k] = v
		}
	}
	return r, nil
}

// isIssue accepts "_type":"issue" and, for exports older than _type, any record with an id.
func isIssue(fields map[string]json.RawMessage) bool {
	rawType, ok := fields["_type"]
	if !ok {
		_, hasID := fields["id"]
		return hasID
	}
	var typ string
	return json.Unmarshal(rawType, &typ) == nil && typ == "issue"
}

// decodeDeps decodes the dependencies of issue id; each must name what it depends on, as bd
// always writes depends_on_id. Show's form is accepted only in the bd CLI's output (bdPrinted),
// where the depended-on issue's status is current; in a file it would be a stale copy.
func decodeDeps(id string, raw json.RawMessage, bdPrinted bool) ([]Dependency, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var wires []depWire
	if err := json.Unmarshal(raw, &wires); err != nil {
		return nil, err
	}
	deps := make([]Dependency, 0, len(wires))
	for _, w := range wires {
		switch {
		case w.DependsOnID != "":
			deps = append(deps, Dependency{
				IssueID: w.IssueID, DependsOnID: w.DependsOnID, Type: w.Type,
				CreatedAt: w.CreatedAt, CreatedBy: w.CreatedBy, Metadata: metadataString(w.Metadata),
			})
		case !bdPrinted:
			return nil, errors.New("dependency without depends_on_id")
		case w.ID != "" && w.DependencyType != "":
			deps = append(deps, Dependency{IssueID: id, DependsOnID: w.ID, Type: w.DependencyType, DependsOnStatus: w.Status})
		default:
			return nil, errors.New("dependency without depends_on_id or id and dependency_type")
		}
	}
	return deps, nil
}

// metadataString is the metadata as bd 1.x keeps it, a JSON string ("" for null), or the raw
// JSON of any other value.
func metadataString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// marshal writes the record as one JSON line: known fields in bd's order, then the fields we
// do not model, sorted by key. HTML is not escaped so descriptions stay readable in diffs.
func (r *record) marshal() ([]byte, error) {
	r.wire.Type = "issue"
	b, err := encodeJSON(r.wire)
	if err != nil {
		return nil, err
	}
	if len(r.extra) == 0 {
		return b, nil
	}
	b = b[:len(b)-1] // drop the closing brace
	for _, k := range slices.Sorted(maps.Keys(r.extra)) {
		key, _ := encodeJSON(k) // a string: cannot fail
		var val bytes.Buffer
		if err := json.Compact(&val, r.extra[k]); err != nil {
			return nil, fmt.Errorf("field %s: %w", k, err)
		}
		b = append(append(append(append(b, ','), key...), ':'), val.Bytes()...)
	}
	return append(b, '}'), nil
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// task converts the record to the backend-neutral Task, copying slices so callers cannot
// change the record behind the backend's back.
func (r *record) task() Task {
	w := r.wire
	return Task{
		ID: w.ID, Title: w.Title, Description: w.Description, Design: w.Design,
		AcceptanceCriteria: w.AcceptanceCriteria, Notes: w.Notes, Status: w.Status,
		Priority: w.Priority, IssueType: w.IssueType, Assignee: w.Assignee, Owner: w.Owner,
		CreatedAt: w.CreatedAt, CreatedBy: w.CreatedBy, UpdatedAt: w.UpdatedAt,
		StartedAt: copyTime(w.StartedAt), ClosedAt: copyTime(w.ClosedAt), CloseReason: w.CloseReason,
		Labels: slices.Clone(w.Labels), Dependencies: slices.Clone(r.deps), Parent: r.parent(),
	}
}

// parent prefers the parent-child dependency (what bd stores) over a "parent" key, which only
// appears in records copied from `bd list --json` output.
func (r *record) parent() string {
	for _, d := range r.deps {
		if d.Type == "parent-child" {
			return d.DependsOnID
		}
	}
	var p string
	if raw, ok := r.extra["parent"]; ok && json.Unmarshal(raw, &p) == nil {
		return p
	}
	return ""
}

func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// newRecord validates a NewTask and builds its record; the id is assigned under the lock.
func newRecord(t NewTask) (*record, error) {
	title := strings.TrimSpace(t.Title)
	if title == "" {
		return nil, errors.New("task title is empty")
	}
	typ := cmp.Or(t.Type, "task")
	if !ValidType(typ) {
		return nil, fmt.Errorf("invalid task type %q: use task, bug, feature, epic, chore, decision, spike, story or milestone", typ)
	}
	prio := t.Priority
	if prio == PriorityUnset {
		prio = DefaultPriority
	}
	if prio < 0 || prio > 4 {
		return nil, fmt.Errorf("invalid priority %d: use 0 (highest) to 4 (lowest)", t.Priority)
	}
	return &record{dirty: true, wire: issueWire{
		Title: title, Description: t.Description, Design: t.Design, AcceptanceCriteria: t.Acceptance,
		Status: StatusOpen, Priority: prio, IssueType: typ, Owner: t.Actor, CreatedBy: t.Actor,
		Labels: normalizeLabels(t.Labels),
	}}, nil
}

func (r *record) setID(id, parent, actor string, now time.Time) {
	r.wire.ID = id
	r.wire.CreatedAt, r.wire.UpdatedAt = now, now
	if parent == "" {
		return
	}
	r.setDeps([]Dependency{{
		IssueID: id, DependsOnID: parent, Type: "parent-child",
		CreatedAt: now, CreatedBy: actor, Metadata: "{}",
	}}, now)
}

// setDeps replaces the dependencies, and their raw form the record is written from, at now.
func (r *record) setDeps(deps []Dependency, now time.Time) {
	r.deps, r.wire.UpdatedAt = deps, now
	r.wire.Dependencies, _ = encodeJSON(deps) // plain structs: cannot fail
	r.dirty = true
}

func (r *record) setStatus(status, reason string, now time.Time) {
	w := &r.wire
	if status == StatusInProgress && (w.Status != StatusInProgress || w.StartedAt == nil) {
		w.StartedAt = &now
	}
	if status == StatusClosed {
		w.ClosedAt, w.CloseReason = &now, reason
	} else {
		w.ClosedAt, w.CloseReason = nil, ""
	}
	w.Status, w.UpdatedAt = status, now
	r.dirty = true
}

// bump returns now in UTC, nudged past prev so updated_at changes on every write even when
// the clock is coarse or steps back.
func bump(now, prev time.Time) time.Time {
	now = now.UTC()
	if !now.After(prev) {
		now = prev.UTC().Add(time.Nanosecond)
	}
	return now
}

// normalizeLabels sorts and de-duplicates labels, as bd stores them.
func normalizeLabels(in []string) []string {
	var out []string
	for _, l := range in {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
