package tracker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
)

// bdIssue is one issue as bd prints it: a Task (its `parent` is bd's computed one, of list,
// ready and show) with the dependencies in either of bd's forms (see depWire), and the metadata,
// where git-norma keeps its state under StateKey. Other keys (counts, comments,
// schema_version) are ignored.
type bdIssue struct {
	Task
	Dependencies json.RawMessage `json:"dependencies"`
	Metadata     json.RawMessage `json:"metadata"`
	// DependentCount counts, in show's output, every task that depends on this one, its
	// children included (list and ready count no children: see BD.tasks).
	DependentCount *int `json:"dependent_count"`
}

// StateKey is the key of a bd task's metadata that holds git-norma's state.
const StateKey = "norma"

// task converts an issue bd printed into a Task. The parent is bd's own `parent` field when
// present, else the parent-child dependency.
func (bi *bdIssue) task() (Task, error) {
	t := bi.Task
	if t.ID == "" {
		return Task{}, fmt.Errorf("issue without an id")
	}
	deps, err := decodeDeps(t.ID, bi.Dependencies, true)
	if err != nil {
		return Task{}, fmt.Errorf("issue %s: dependencies: %w", t.ID, err)
	}
	t.Dependencies = deps
	t.Parent = cmp.Or(t.Parent, (&record{deps: deps}).parent())
	t.NoChildren = bi.DependentCount != nil && *bi.DependentCount == 0
	if t.State, err = metadataState(bi.Metadata); err != nil {
		return Task{}, fmt.Errorf("issue %s: metadata: %w", t.ID, err)
	}
	return t, nil
}

// metadataState is git-norma's state in a task's metadata (a JSON object; bd prints none when
// the task has none), or nil.
func metadataState(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	if st := keys[StateKey]; len(st) > 0 && string(st) != "null" {
		return st, nil
	}
	return nil, nil
}

// array parses stdout as a JSON array of issues (list, ready, show, update, close). bd prints
// `null` for an empty result in some versions; that is an empty list.
func (r *bdResult) array() ([]Task, error) {
	trimmed := bytes.TrimSpace(r.stdout)
	if string(trimmed) == "null" {
		return nil, nil
	}
	var items []bdIssue
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, r.shapeError("want a JSON array of issues", nil)
	}
	if err := json.Unmarshal(trimmed, &items); err != nil {
		return nil, r.shapeError("want a JSON array of issues", err)
	}
	tasks := make([]Task, 0, len(items))
	for i := range items {
		t, err := items[i].task()
		if err != nil {
			return nil, r.shapeError(fmt.Sprintf("item %d", i), err)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// object parses stdout as one issue object (create, which adds schema_version).
func (r *bdResult) object() (Task, error) {
	trimmed := bytes.TrimSpace(r.stdout)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Task{}, r.shapeError("want a JSON object", nil)
	}
	var it bdIssue
	if err := json.Unmarshal(trimmed, &it); err != nil {
		return Task{}, r.shapeError("want a JSON object", err)
	}
	if msg := jsonErrorMessage(trimmed); msg != "" && it.ID == "" {
		return Task{}, r.errorf(msg)
	}
	t, err := it.task()
	if err != nil {
		return Task{}, r.shapeError("want an issue", err)
	}
	return t, nil
}
