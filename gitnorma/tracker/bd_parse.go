package tracker

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// bdIssue is one issue as bd prints it: a Task (its `parent` is bd's computed one, of list,
// ready and show) with the dependencies in either of bd's forms (see depWire), and the metadata,
// where git-norma keeps its state under StateKey. Other keys (counts, comments,
// schema_version) are ignored.
type bdIssue struct {
	Task
	Dependencies json.RawMessage `json:"dependencies"`
	Metadata     json.RawMessage `json:"metadata"`
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

func (r *bdResult) errorf(msg string) *CallError {
	return &CallError{Args: slices.Clone(r.args), Stderr: r.stderr, Message: msg}
}

// shapeError reports output bd printed with exit 0 that is not what the command promises,
// quoting its start so a format change in a new bd release is easy to recognize.
func (r *bdResult) shapeError(want string, err error) *CallError {
	msg := "unexpected output (" + want + ")"
	if err != nil {
		msg += ": " + err.Error()
	}
	if e := jsonErrorMessage(r.stdout); e != "" {
		msg += ": " + e
	}
	start := string(bytes.TrimSpace(r.stdout))
	if start == "" {
		msg += "; stdout is empty"
	} else {
		msg += fmt.Sprintf("; stdout starts with %q", truncate(start, 200))
	}
	return r.errorf(msg)
}

// jsonErrorMessage returns the "error" text of bd's JSON error object ({"error": ...,
// "schema_version": 1}), or "" when stdout is not one.
func jsonErrorMessage(stdout []byte) string {
	var e struct {
		Error string `json:"error"`
		Hint  string `json:"hint"`
	}
	if json.Unmarshal(stdout, &e) != nil || e.Error == "" {
		return ""
	}
	if e.Hint != "" {
		return e.Error + " (" + e.Hint + ")"
	}
	return e.Error
}

// bd's messages for an id that resolves to nothing: show's JSON error, close's, and the
// "Error resolving X: no issue found matching" update and label print on stderr.
var bdNotFoundRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`no issues? found matching|(?i:\bissue \S+ not found)`)
})

func (e *CallError) notFound() bool {
	return bdNotFoundRE().MatchString(e.Message) || bdNotFoundRE().MatchString(e.Stderr)
}

// claimRefused recognizes `update --claim` losing: "Error claiming X: issue already claimed by
// Y", (newer bd) "issue not claimable: status S", or, on a Dolt server where another worker's
// claim committed first, a serialization failure (see raceLost).
func (e *CallError) claimRefused() bool {
	s := e.Stderr + "\n" + e.Message
	return strings.Contains(s, "already claimed") || strings.Contains(s, "not claimable") || e.raceLost()
}

// raceLost recognizes Dolt's `Error 1213 (40001): serialization failure`: a transaction that
// lost to a concurrent one (two workers claiming at once). Done again it may go through.
func (e *CallError) raceLost() bool {
	s := e.Stderr + "\n" + e.Message
	return strings.Contains(s, "Error 1213") || strings.Contains(s, "serialization failure")
}
