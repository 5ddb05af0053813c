package gitnorma

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

func TestWithVerify(t *testing.T) {
	tests := []struct {
		name        string
		description string
		verify      []string
		// want is the parsed Verify list when it differs from verify.
		want []string
	}{
		{"one command, no description", "", []string{"go test ./..."}, nil},
		{"backticks", "", []string{"test \"`cat out.txt`\" = hello", "`command -v go` version"}, nil},
		{"quotes and commas", "", []string{`grep -q 'Hello, world' hello.txt`, `test "$(printf 'a, b')" = "a, b"`}, nil},
		{"pipes and redirects", "", []string{"go test ./... 2>&1 | tee log | grep -v FAIL", "echo a,b,c | cut -d, -f2 > x && test -s x || exit 1"}, nil},
		{"looks like a field or a list item", "", []string{"echo Verify: done", "echo Objective: x", "- not a list", "1. not numbered", "* star"}, nil},
		{"markdown and a hash", "", []string{"**bold** `code` # comment", "[ -f README.md ]"}, nil},
		{"surrounding spaces trimmed", "", []string{"  make test\t"}, []string{"make test"}},
		{"many commands", "", []string{"a", "b", "c", "d", "e", "f"}, nil},
		{"after a Ready Contract", "Objective: greet the world with \"Hello, world\"\nArtifact: hello.txt\n",
			[]string{"grep -q 'Hello, world' hello.txt"}, nil},
		{"after prose ending without a newline", "Fix the redirect.\n\nIt loops.", []string{"go test ./login/..."}, nil},
		{"after trailing blank lines", "Objective: x\n\n\n", []string{"make"}, nil},
		{"after an unrelated code fence", "Notes:\n```go\nfunc main() {}\n```\n", []string{"go vet ./..."}, nil},
		{"after a Verify field of the description", "Verify: make lint", []string{"make test"}, []string{"make lint", "make test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withVerify(tt.description, tt.verify)
			want := tt.want
			if want == nil {
				want = tt.verify
			}
			rc := loop.ParseReadyContract(got)
			assert.Equal(t, want, rc.Verify, "description:\n%s", got)

			orig := loop.ParseReadyContract(tt.description)
			assert.Equal(t, orig.Objective, rc.Objective)
			assert.Equal(t, orig.Artifact, rc.Artifact)
			assert.True(t, strings.HasPrefix(got, strings.TrimRight(tt.description, "\n")), "the original description is kept:\n%s", got)
			assert.True(t, strings.HasSuffix(got, "```\n"), "the block is closed:\n%s", got)
		})
	}
	t.Run("no commands", func(t *testing.T) {
		for _, d := range []string{"", "Objective: x\n", "Verify: make"} {
			assert.Equal(t, d, withVerify(d, nil))
		}
	})
}

// initApp initialises git-norma in a fresh repository and opens it.
func initApp(t *testing.T) (*App, *gittest.Repo) {
	t.Helper()
	repo := gittest.NewRepo(t)
	_, err := Init(context.Background(), repo.Dir, InitOptions{})
	require.NoError(t, err)
	app, err := Open(context.Background(), repo.Dir)
	require.NoError(t, err)
	return app, repo
}

func requireCode(t *testing.T, err error, code int) *Error {
	t.Helper()
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
	assert.Equal(t, code, ExitCode(e), "exit code of %v", err)
	return e
}

func TestAddTaskRejects(t *testing.T) {
	ctx := context.Background()
	app, repo := initApp(t)
	backlog := filepath.Join(repo.Dir, ".beads", "issues.jsonl")
	valid := TaskSpec{Title: "Fix the login redirect", Verify: []string{"go test ./..."}, Type: "bug", Priority: 2}
	with := func(edit func(*TaskSpec)) TaskSpec {
		s := valid
		s.Verify = append([]string(nil), valid.Verify...)
		edit(&s)
		return s
	}
	tests := []struct {
		name string
		spec TaskSpec
		want string
	}{
		{"empty title", with(func(s *TaskSpec) { s.Title = "" }), "title is empty"},
		{"blank title", with(func(s *TaskSpec) { s.Title = " \t " }), "title is empty"},
		{"newline title", with(func(s *TaskSpec) { s.Title = "\n\n" }), "title is empty"},
		{"empty verify", with(func(s *TaskSpec) { s.Verify = []string{""} }), "--verify"},
		{"blank verify", with(func(s *TaskSpec) { s.Verify = []string{"  "} }), "--verify"},
		{"second verify empty", with(func(s *TaskSpec) { s.Verify = []string{"make", ""} }), "--verify"},
		{"multi-line verify", with(func(s *TaskSpec) { s.Verify = []string{"make lint\nmake test"} }), "--verify"},
		{"verify with a trailing newline", with(func(s *TaskSpec) { s.Verify = []string{"make test\n"} }), "--verify"},
		{"verify closing the fence", with(func(s *TaskSpec) { s.Verify = []string{"make\n```"} }), "--verify"},
		{"unknown type", with(func(s *TaskSpec) { s.Type = "docs" }), `unknown task type "docs"`},
		{"capitalised type", with(func(s *TaskSpec) { s.Type = "Bug" }), `unknown task type "Bug"`},
		{"internal bd type", with(func(s *TaskSpec) { s.Type = "molecule" }), `unknown task type "molecule"`},
		{"parent path traversal", with(func(s *TaskSpec) { s.Parent = "../../etc" }), "invalid task id"},
		{"parent without suffix", with(func(s *TaskSpec) { s.Parent = "norma-" }), "invalid task id"},
		{"parent in uppercase", with(func(s *TaskSpec) { s.Parent = "NORMA-abc1" }), "invalid task id"},
		{"parent with another prefix", with(func(s *TaskSpec) { s.Parent = "other-abc1" }), "invalid task id"},
		{"parent with a slash", with(func(s *TaskSpec) { s.Parent = "norma-abc1/x" }), "invalid task id"},
		{"parent with a space", with(func(s *TaskSpec) { s.Parent = "norma-abc1 x" }), "invalid task id"},
		{"parent with a non-numeric child", with(func(s *TaskSpec) { s.Parent = "norma-abc1.x" }), "invalid task id"},
		{"parent with an empty child", with(func(s *TaskSpec) { s.Parent = "norma-abc1..1" }), "invalid task id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.Backlog().Add(ctx, tt.spec)
			requireCode(t, err, ExitUsage)
			assert.Contains(t, err.Error(), tt.want)
			assert.NoFileExists(t, backlog, "refused before a file exists")
		})
	}

	t.Run("unknown parent", func(t *testing.T) {
		_, err := app.Backlog().Add(ctx, with(func(s *TaskSpec) { s.Parent = "norma-zzzz" }))
		e := requireCode(t, err, ExitFail)
		assert.Contains(t, err.Error(), "norma-zzzz")
		assert.Contains(t, e.Hint, "git norma task list")
		tasks, _, err := app.Backlog().Filter(ctx, TaskFilter{})
		require.NoError(t, err)
		assert.Empty(t, tasks)
	})
}

func TestAddTaskRoundTrip(t *testing.T) {
	ctx := context.Background()
	app, repo := initApp(t)
	tests := []struct {
		name     string
		spec     TaskSpec
		wantType string
	}{
		{"full", TaskSpec{
			Title:       "  Fix the login redirect  ",
			Description: "Objective: users land where they asked\nArtifact: login/redirect.go\n",
			Acceptance:  "- [ ] redirect keeps the path\n- [ ] no open redirect",
			Verify:      []string{"go test ./login/...", "grep -q 'a, b' x | wc -l", "test \"`cat v`\" = 1"},
			Type:        "bug", Priority: 1,
		}, "bug"},
		{"no verify", TaskSpec{Title: "Write docs", Description: "plain prose", Type: "chore", Priority: 3}, "chore"},
		{"default type and highest priority", TaskSpec{Title: "Add a flag", Verify: []string{"make"}, Priority: 0}, "task"},
	}
	var parent tracker.Task
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, err := app.Backlog().Add(ctx, tt.spec)
			require.NoError(t, err)
			if i == 0 {
				parent = created
			}
			require.NoError(t, app.ValidateTaskID(created.ID))
			assert.Equal(t, strings.TrimSpace(tt.spec.Title), created.Title)
			assert.Equal(t, tt.wantType, created.IssueType)
			assert.Equal(t, tt.spec.Priority, created.Priority)
			assert.Equal(t, tracker.StatusOpen, created.Status)
			assert.Equal(t, "Test User", created.CreatedBy, "the actor is the git user")
			assert.Equal(t, tt.spec.Acceptance, created.AcceptanceCriteria)
			assert.Equal(t, withVerify(tt.spec.Description, tt.spec.Verify), created.Description)

			// A fresh App reads the same task back from .beads/issues.jsonl.
			fresh, err := Open(ctx, repo.Dir)
			require.NoError(t, err)
			got, err := fresh.Backlog().Show(ctx, created.ID)
			require.NoError(t, err)
			assert.Equal(t, created.ID, got.ID)
			assert.Equal(t, created.Title, got.Title)
			assert.Equal(t, created.Description, got.Description)
			assert.Equal(t, created.AcceptanceCriteria, got.AcceptanceCriteria)
			assert.Equal(t, created.IssueType, got.IssueType)
			assert.Equal(t, created.Priority, got.Priority)
			assert.Equal(t, created.Status, got.Status)
			assert.True(t, created.CreatedAt.Equal(got.CreatedAt))
			assert.Equal(t, tt.spec.Verify, nilIfEmpty(loop.ParseReadyContract(got.Description).Verify))
		})
	}

	t.Run("child", func(t *testing.T) {
		require.NotEmpty(t, parent.ID)
		for n, want := range []string{parent.ID + ".1", parent.ID + ".2"} {
			child, err := app.Backlog().Add(ctx, TaskSpec{Title: "Part " + want, Parent: parent.ID, Verify: []string{"true"}, Priority: 2})
			require.NoError(t, err, "child %d", n)
			assert.Equal(t, want, child.ID)
			assert.Equal(t, parent.ID, child.Parent)
			got, err := app.Backlog().Show(ctx, child.ID)
			require.NoError(t, err)
			assert.Equal(t, parent.ID, got.Parent)
		}
	})

	t.Run("backlog file", func(t *testing.T) {
		tasks, _, err := app.Backlog().Filter(ctx, TaskFilter{})
		require.NoError(t, err)
		assert.Len(t, tasks, len(tests)+2)
		f, err := os.Open(filepath.Join(repo.Dir, ".beads", "issues.jsonl"))
		require.NoError(t, err)
		defer f.Close()
		lines := 0
		for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
			var rec map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "line %d", lines+1)
			assert.Equal(t, tasks[lines].ID, rec["id"])
		}
		assert.Equal(t, len(tasks), lines, "one JSON line per task")
	})
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestShowTaskErrors(t *testing.T) {
	ctx := context.Background()
	app, _ := initApp(t)
	tests := []struct {
		name, id string
		code     int
	}{
		{"empty id", "", ExitUsage},
		{"path", "../x", ExitUsage},
		{"other prefix", "bd-abc1", ExitUsage},
		{"unknown", "norma-zzzz", ExitFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := app.Backlog().Show(ctx, tt.id)
			e := requireCode(t, err, tt.code)
			assert.Contains(t, e.Hint, "git norma task list")
		})
	}
}
