package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleKeys collects the issue and dependency keys real bd 1.0.5 printed for `bd list --all
// --json` (testdata/bd_list_all.json, copied from the shared beads samples). List-only
// computed keys are dropped because bd does not export them to JSONL.
func sampleKeys(t *testing.T) (issue, dep map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "bd_list_all.json"))
	require.NoError(t, err)
	var items []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &items))
	issue, dep = map[string]bool{"_type": true}, map[string]bool{}
	for _, it := range items {
		for k := range it {
			issue[k] = true
		}
		var deps []map[string]json.RawMessage
		if raw, ok := it["dependencies"]; ok {
			require.NoError(t, json.Unmarshal(raw, &deps))
		}
		for _, d := range deps {
			for k := range d {
				dep[k] = true
			}
		}
	}
	for _, k := range []string{"dependency_count", "dependent_count", "comment_count", "parent"} {
		delete(issue, k)
	}
	// Keys the sample tasks never had set but bd's Issue record defines with the same names.
	for _, k := range []string{"notes", "assignee", "started_at", "closed_at", "close_reason"} {
		issue[k] = true
	}
	return issue, dep
}

func readLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasSuffix(data, []byte("\n")), "file ends with a newline")
	var out []map[string]json.RawMessage
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l), &m), "line %d is one JSON object", i+1)
		out = append(out, m)
	}
	return out
}

func TestFileIsBdJSONL(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	epic := mustCreate(t, j, NewTask{Title: "Epic", Type: "epic", Description: "d", Design: "x",
		Acceptance: "ac", Labels: []string{"b", "a"}, Actor: "Norma Test"})
	child := mustCreate(t, j, NewTask{Title: "Child <&>", Parent: epic.ID, Actor: "Norma Test"})
	require.NoError(t, j.SetStatus(ctx, child.ID, StatusInProgress, ""))
	require.NoError(t, j.SetStatus(ctx, epic.ID, StatusClosed, "done"))

	issueKeys, depKeys := sampleKeys(t)
	lines := readLines(t, path)
	require.Len(t, lines, 2)
	for _, m := range lines {
		assert.JSONEq(t, `"issue"`, string(m["_type"]))
		for _, k := range []string{"id", "title", "priority", "created_at", "updated_at", "status", "issue_type"} {
			assert.Contains(t, m, k)
		}
		for k := range m {
			assert.True(t, issueKeys[k], "key %q is not a bd issue field", k)
		}
	}
	assert.JSONEq(t, `["a","b"]`, string(lines[0]["labels"]))
	assert.Contains(t, lines[0], "closed_at")
	assert.JSONEq(t, `"done"`, string(lines[0]["close_reason"]))
	assert.Contains(t, lines[1], "started_at")

	var deps []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(lines[1]["dependencies"], &deps))
	require.Len(t, deps, 1)
	assert.Equal(t, sortedKeys(depKeys), sortedKeys(deps[0]))
	assert.JSONEq(t, `"{}"`, string(deps[0]["metadata"]))
	assert.JSONEq(t, `"parent-child"`, string(deps[0]["type"]))

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"Child <&>"`, "no HTML escaping")
	assert.Contains(t, string(raw), `{"_type":"issue","id":"`)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// A file as a real bd might leave it: a non-issue line, issues with fields git-norma does not
// model, loose formatting and a legacy "parent" key.
const bdWrittenFile = `{"_type":"memory","key":"k","value":"v"}
{"_type":"issue","id":"norma-aaa","title":"Bd task","status":"open","priority":1,"issue_type":"task","created_at":"2026-11-22T06:27:39Z","updated_at":"2026-11-22T06:27:39Z","spec_id":"S-1","external_ref":"gh-9","metadata":{"k":[1,2]},"comments":[{"id":1,"issue_id":"norma-aaa","author":"a","text":"hi","created_at":"2026-11-22T06:27:39Z"}],"dependencies":[{"issue_id":"norma-aaa","depends_on_id":"norma-bbb","type":"blocks","created_at":"2026-11-22T06:27:39Z","created_by":"x","metadata":"{}","thread_id":"t1"}]}
{ "_type": "issue", "id": "norma-bbb", "title": "Untouched",  "priority": 2, "parent": "norma-aaa", "created_at": "2026-11-22T06:27:39Z", "updated_at": "2026-11-22T06:27:39Z" }
`

func TestRewritePreservesForeignData(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(bdWrittenFile), 0o600))
	orig := readLines(t, path)

	bbb, err := j.Get(ctx, "norma-bbb")
	require.NoError(t, err)
	assert.Equal(t, "norma-aaa", bbb.Parent, "legacy parent key is read")

	require.NoError(t, j.SetStatus(ctx, "norma-aaa", StatusClosed, "done"))
	mustCreate(t, j, NewTask{Title: "new"})

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	in := strings.Split(bdWrittenFile, "\n")
	out := strings.Split(string(data), "\n")
	assert.Equal(t, in[0], out[0], "foreign line kept verbatim")
	assert.Equal(t, in[2], out[2], "untouched issue kept verbatim")

	got := readLines(t, path)
	require.Len(t, got, 4)
	for _, k := range []string{"spec_id", "external_ref", "metadata", "comments", "dependencies", "created_at"} {
		assert.JSONEq(t, string(orig[1][k]), string(got[1][k]), "field %s", k)
	}
	assert.JSONEq(t, `"closed"`, string(got[1]["status"]))
	assert.NotEqual(t, string(orig[1]["updated_at"]), string(got[1]["updated_at"]))

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "rewrite keeps the file mode")

	aaa, err := j.Get(ctx, "norma-aaa")
	require.NoError(t, err)
	require.Len(t, aaa.Dependencies, 1)
	assert.Equal(t, "blocks", aaa.Dependencies[0].Type)
	assert.Empty(t, aaa.Parent)
}

func TestMalformedLineIsReportedAndNothingWritten(t *testing.T) {
	ctx := context.Background()
	tests := []struct{ name, bad string }{
		{"not json", `{"_type":"issue","id":`},
		{"not an object", `[1,2]`},
		{"wrong field type", `{"_type":"issue","id":"norma-x","title":"t","priority":"high"}`},
		{"issue without id", `{"_type":"issue","title":"t","priority":1}`},
		// bd always writes depends_on_id; bd show's form (id, dependency_type) is CLI output only.
		{"dependency without depends_on_id", `{"_type":"issue","id":"norma-x","title":"t","priority":1,"dependencies":[{"issue_id":"norma-x","type":"blocks"}]}`},
		{"dependency in bd show's form", `{"_type":"issue","id":"norma-x","title":"t","priority":1,"dependencies":[{"id":"norma-aaa","status":"closed","dependency_type":"blocks"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, path := newTestJSONL(t)
			content := strings.Split(bdWrittenFile, "\n")[1] + "\n" + tc.bad + "\n"
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))

			_, err := j.List(ctx)
			require.Error(t, err)
			assert.ErrorContains(t, err, path+":2:")

			_, err = j.Create(ctx, NewTask{Title: "x", Priority: PriorityUnset})
			assert.ErrorContains(t, err, path+":2:")
			assert.ErrorContains(t, j.SetStatus(ctx, "norma-aaa", StatusClosed, ""), path+":2:")

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, content, string(after))
		})
	}
}

func TestConcurrentCreateLosesNothing(t *testing.T) {
	j0, path := newTestJSONL(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			j := NewJSONL(path, j0.lockPath, "norma") // own instance, own file descriptors
			_, errs[i] = j.Create(context.Background(), NewTask{Title: fmt.Sprintf("task %d", i), Priority: PriorityUnset})
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	list, err := j0.List(context.Background())
	require.NoError(t, err)
	require.Len(t, list, n)
	ids, titles := map[string]bool{}, map[string]bool{}
	for _, task := range list {
		ids[task.ID], titles[task.Title] = true, true
	}
	assert.Len(t, ids, n)
	assert.Len(t, titles, n)
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	require.NoError(t, err)
	assert.Empty(t, matches, "no temp files left behind")
}

// TestUpdateDecodesOnlyItsTaskInAFileItWrote checks the cost rule of the per-step task update:
// in a file git-norma wrote last (this process or another: the identity is kept beside the
// lock), only the lines that can hold the task are decoded; a file someone else changed since
// is checked whole, so a malformed line is still reported.
func TestUpdateDecodesOnlyItsTaskInAFileItWrote(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, mustCreate(t, j, NewTask{Title: fmt.Sprintf("task %d", i)}).ID)
	}
	decoded := func() int {
		n := 0
		require.NoError(t, j.update(ctx, func(f *issueFile) error {
			require.NotNil(t, f.find(ids[2]))
			for _, l := range f.lines {
				if l.parsed {
					n++
				}
			}
			return nil
		}))
		return n
	}
	assert.Equal(t, 1, decoded(), "the file as this value wrote it: one line decoded")

	other := NewJSONL(path, j.lockPath, "norma")
	require.NoError(t, other.SetStatus(ctx, ids[0], StatusClosed, "done elsewhere"))
	assert.Equal(t, 1, decoded(), "written by another git-norma since, which checked it")
	fresh := NewJSONL(path, j.lockPath, "norma")
	n := 0
	require.NoError(t, fresh.update(ctx, func(f *issueFile) error {
		for _, l := range f.lines {
			if l.parsed {
				n++
			}
		}
		return nil
	}))
	assert.Zero(t, n, "a new process trusts the identity recorded beside the lock")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+".bd", data, 0o644))
	require.NoError(t, os.Rename(path+".bd", path)) // as bd export or a hand edit would
	assert.Equal(t, 5, decoded(), "written by someone else since: checked whole")

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"_type":"issue","id":` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.ErrorContains(t, j.SetStatus(ctx, ids[2], StatusClosed, ""), path+":6:", "an edit in place is noticed")
}
