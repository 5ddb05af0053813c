package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bd backend is tested against testdata/bd/fake-bd, which replays outputs recorded from a
// real bd 1.0.5 (testdata/bd/samples, see INDEX.txt there) and logs every argv it receives.

// fakeBD is the fake bd, installed as `bd` first on PATH, with its call log and response table.
type fakeBD struct {
	t   *testing.T
	bd  *BD
	dir string // BD.Dir, standing for the repository root
	log string
	tab string
	tmp string
}

// entry is one response table line: argv (a "*" element matches any one argument) => sample.
func entry(sample string, argv ...string) string {
	return strings.Join(argv, "\t") + "\t=>\t" + sample
}

func newFakeBD(t *testing.T, table ...string) *fakeBD {
	t.Helper()
	bin := t.TempDir()
	installScript(t, filepath.Join("testdata", "bd", "fake-bd"), filepath.Join(bin, "bd"))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	samples, err := filepath.Abs(filepath.Join("testdata", "bd", "samples"))
	require.NoError(t, err)
	t.Setenv("FAKE_BD_SAMPLES", samples)
	tmp := t.TempDir()
	f := &fakeBD{t: t, dir: t.TempDir(), log: filepath.Join(tmp, "calls.log"), tab: filepath.Join(tmp, "table"), tmp: tmp}
	t.Setenv("FAKE_BD_LOG", f.log)
	t.Setenv("FAKE_BD_TABLE", f.tab)
	f.setTable(table...)
	f.bd = NewBD(f.dir)
	return f
}

func installScript(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o755))
	require.NoError(t, os.Chmod(dst, 0o755))
}

func (f *fakeBD) setTable(lines ...string) {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(f.tab, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

// sample writes a response into the test's temp dir and returns its name for the table.
func (f *fakeBD) sample(name, stdout, stderr string, rc int) string {
	f.t.Helper()
	base := filepath.Join(f.tmp, name)
	require.NoError(f.t, os.WriteFile(base+".json", []byte(stdout), 0o644))
	require.NoError(f.t, os.WriteFile(base+".stderr", []byte(stderr), 0o644))
	require.NoError(f.t, os.WriteFile(base+".rc", []byte(strconv.Itoa(rc)+"\n"), 0o644))
	return base
}

type bdCall struct {
	cwd  string
	args []string
}

// calls reads the fake's log: one line per call, "cwd=<dir>" then the arguments, tab-separated,
// with \\, \t and \n escaped.
func (f *fakeBD) calls() []bdCall {
	f.t.Helper()
	data, err := os.ReadFile(f.log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(f.t, err)
	var out []bdCall
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		c := bdCall{cwd: strings.TrimPrefix(unescapeLog(fields[0]), "cwd="), args: []string{}}
		for _, a := range fields[1:] {
			c.args = append(c.args, unescapeLog(a))
		}
		out = append(out, c)
	}
	return out
}

func (f *fakeBD) argvs() [][]string {
	var out [][]string
	for _, c := range f.calls() {
		out = append(out, c.args)
	}
	return out
}

func unescapeLog(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func strPtr(s string) *string { return &s }

func TestBDArgv(t *testing.T) {
	tests := []struct {
		name   string
		sample string
		call   func(context.Context, *BD) error
		want   []string // nil: no call at all
	}{
		{"get", "show_task_b", func(ctx context.Context, b *BD) error {
			_, err := b.Get(ctx, "norma-uq0.1.2")
			return err
		}, []string{"show", "norma-uq0.1.2", "--json"}},
		{"list", "list_all", func(ctx context.Context, b *BD) error {
			_, err := b.List(ctx)
			return err
		}, []string{"list", "--all", "--limit", "0", "--json"}},
		{"children", "list_all", func(ctx context.Context, b *BD) error {
			_, err := b.Children(ctx, "norma-uq0")
			return err
		}, []string{"list", "--parent", "norma-uq0", "--all", "--limit", "0", "--json"}},
		{"ready", "ready", func(ctx context.Context, b *BD) error {
			_, err := b.Ready(ctx)
			return err
		}, []string{"ready", "--limit", "0", "--json"}},
		{"create child with everything", "create_task_a", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{
				Title: " Task A ", Type: "task", Priority: 2, Parent: "norma-uq0.1",
				Description: "Task A description", Acceptance: "- [ ] A works",
				Labels: []string{"go", "backend", " go "},
			})
			return err
		}, []string{
			"create", "Task A", "-t", "task", "-p", "2", "--parent", "norma-uq0.1", "--no-inherit-labels",
			"--description", "Task A description", "--acceptance", "- [ ] A works", "-l", "backend,go", "--json",
		}},
		{"create with design, priority 0 and actor", "create_feature", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "Feature", Type: "feature", Priority: 0, Design: "Design text", Actor: "Norma Test"})
			return err
		}, []string{"create", "Feature", "-t", "feature", "-p", "0", "--design", "Design text", "--actor", "Norma Test", "--json"}},
		{"create defaults: type task, bd's priority", "create_task_a", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "Task A", Priority: PriorityUnset})
			return err
		}, []string{"create", "Task A", "-t", "task", "--json"}},
		{"close with reason", "close_task_a", func(ctx context.Context, b *BD) error {
			return b.SetStatus(ctx, "norma-uq0.1.1", StatusClosed, "Done by git-norma")
		}, []string{"close", "norma-uq0.1.1", "--reason", "Done by git-norma", "--json"}},
		{"close without reason", "close_task_a", func(ctx context.Context, b *BD) error {
			return b.SetStatus(ctx, "norma-uq0.1.1", StatusClosed, "  ")
		}, []string{"close", "norma-uq0.1.1", "--reason", "Closed by git-norma", "--json"}},
		{"close forced past open blockers", "close_task_a", func(ctx context.Context, b *BD) error {
			return b.CloseForced(ctx, "norma-uq0.1.1", "Done by git-norma")
		}, []string{"close", "norma-uq0.1.1", "--reason", "Done by git-norma", "--force", "--json"}},
		{"other status", "update_status", func(ctx context.Context, b *BD) error {
			return b.SetStatus(ctx, "norma-uq0.1.1", StatusInProgress, "ignored")
		}, []string{"update", "norma-uq0.1.1", "--status", "in_progress", "--json"}},
		{"claim as bd's actor", "update_claim", func(ctx context.Context, b *BD) error {
			_, err := b.Claim(ctx, "norma-uq0.1.2", "")
			return err
		}, []string{"update", "norma-uq0.1.2", "--claim", "--json"}},
		{"claim as actor", "update_claim", func(ctx context.Context, b *BD) error {
			_, err := b.Claim(ctx, "norma-uq0.1.2", "Norma Test")
			return err
		}, []string{"update", "norma-uq0.1.2", "--claim", "--actor", "Norma Test", "--json"}},
		{"update everything in one call", "update_labels", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{
				Notes:     strPtr(`{"phase":"check"}`),
				AddLabels: []string{"norma-has-check", "norma-has-do"}, RemoveLabels: []string{"go"},
				Status: StatusInProgress,
			})
		}, []string{
			"update", "norma-uq0.1.1", "--notes", `{"phase":"check"}`, "--add-label", "norma-has-check",
			"--add-label", "norma-has-do", "--remove-label", "go", "--status", "in_progress", "--json",
		}},
		{"state into the metadata, never the notes", "update_labels", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{State: json.RawMessage(`{"norma_state":1,"phase":"do"}`), AddLabels: []string{"norma-has-do"}})
		}, []string{
			"update", "norma-uq0.1.1", "--metadata", `{"norma":{"norma_state":1,"phase":"do"}}`, "--add-label", "norma-has-do", "--json",
		}},
		{"update labels only", "update_labels", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{AddLabels: []string{"norma-has-check"}, RemoveLabels: []string{"go"}})
		}, []string{"update", "norma-uq0.1.1", "--add-label", "norma-has-check", "--remove-label", "go", "--json"}},
		{"hand back: open, and nobody's", "update_labels", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{Notes: strPtr("n"), Status: StatusOpen})
		}, []string{"update", "norma-uq0.1.1", "--notes", "n", "--status", "open", "--assignee", "", "--json"}},
		{"update clears notes", "update_notes", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{Notes: strPtr("")})
		}, []string{"update", "norma-uq0.1.1", "--notes", "", "--json"}},
		{"update with nothing to change", "update_notes", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-uq0.1.1", Update{AddLabels: []string{" "}})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBD(t)
			if tt.want != nil {
				f.setTable(entry(tt.sample, tt.want...))
			}
			require.NoError(t, tt.call(context.Background(), f.bd))
			calls := f.calls()
			if tt.want == nil {
				assert.Empty(t, calls)
				return
			}
			require.Len(t, calls, 1)
			assert.Equal(t, tt.want, calls[0].args)
			wantDir, err := filepath.EvalSymlinks(f.dir)
			require.NoError(t, err)
			assert.Equal(t, wantDir, calls[0].cwd, "bd runs in BD.Dir")
		})
	}
}

func TestBDGetParsesShow(t *testing.T) {
	f := newFakeBD(t, entry("show_task_b", "show", "norma-uq0.1.2", "--json"))
	got, err := f.bd.Get(context.Background(), "norma-uq0.1.2")
	require.NoError(t, err)

	assert.Equal(t, "norma-uq0.1.2", got.ID)
	assert.Equal(t, "Task B", got.Title)
	assert.Equal(t, "Task B description", got.Description)
	assert.Equal(t, "- [ ] B works", got.AcceptanceCriteria)
	assert.Equal(t, StatusOpen, got.Status)
	assert.Equal(t, 3, got.Priority)
	assert.Equal(t, "task", got.IssueType)
	assert.Equal(t, "norma@example.com", got.Owner)
	assert.Equal(t, "Norma Test", got.CreatedBy)
	assert.Equal(t, time.Date(2026, 11, 22, 6, 27, 40, 0, time.UTC), got.CreatedAt)
	assert.Equal(t, "norma-uq0.1", got.Parent)
	assert.Empty(t, got.Labels)
	assert.Equal(t, []Dependency{
		{IssueID: "norma-uq0.1.2", DependsOnID: "norma-uq0.1", Type: "parent-child", DependsOnStatus: "open"},
		{IssueID: "norma-uq0.1.2", DependsOnID: "norma-uq0.1.1", Type: "blocks", DependsOnStatus: "open"},
	}, got.Dependencies, "show gives the status of the issue depended on")
	assert.True(t, got.NoChildren, "show's dependent_count 0: nothing depends on it")

	f.setTable(entry("show_epic", "show", "norma-uq0", "--json"))
	epic, err := f.bd.Get(context.Background(), "norma-uq0")
	require.NoError(t, err)
	assert.Equal(t, "epic", epic.IssueType)
	assert.Equal(t, 1, epic.Priority)
	assert.Equal(t, []string{"norma-epic"}, epic.Labels)
	assert.Empty(t, epic.Parent)
	assert.False(t, epic.NoChildren, "show's dependent_count counts the epic's child")
}

func TestBDListAndReadyParse(t *testing.T) {
	f := newFakeBD(t,
		entry("list_all", "list", "--all", "--limit", "0", "--json"),
		entry("ready", "ready", "--limit", "0", "--json"))
	ctx := context.Background()

	list, err := f.bd.List(ctx)
	require.NoError(t, err)
	parents := map[string]string{}
	for _, task := range list {
		parents[task.ID] = task.Parent
	}
	assert.Equal(t, map[string]string{
		"norma-uq0": "", "norma-uq0.1": "norma-uq0", "norma-uq0.1.1": "norma-uq0.1", "norma-uq0.1.2": "norma-uq0.1",
	}, parents)
	assert.Equal(t, "norma-uq0.1.1", list[1].ID)
	assert.Equal(t, []string{"backend", "go"}, list[1].Labels)
	assert.Equal(t, []Dependency{{
		IssueID: "norma-uq0.1.1", DependsOnID: "norma-uq0.1", Type: "parent-child",
		CreatedAt: time.Date(2026, 11, 22, 6, 27, 39, 0, time.UTC), CreatedBy: "Norma Test", Metadata: "{}",
	}}, list[1].Dependencies)
	assert.Equal(t, "Design text", list[2].Design)
	assert.False(t, list[0].NoChildren, "list's dependent_count 0 leaves the epic's child out")

	ready, err := f.bd.Ready(ctx)
	require.NoError(t, err)
	var ids []string
	for _, task := range ready {
		ids = append(ids, task.ID+"<"+task.Parent)
	}
	assert.Equal(t, []string{"norma-uq0<", "norma-uq0.1.1<norma-uq0.1", "norma-uq0.1<norma-uq0"}, ids)
}

func TestBDCreateClaimCloseParse(t *testing.T) {
	f := newFakeBD(t,
		entry("create_task_a", "create", "Task A", "-t", "task", "-p", "2", "--parent", "norma-uq0.1", "--no-inherit-labels", "--json"),
		entry("update_claim", "update", "norma-uq0.1.2", "--claim", "--json"),
		entry("close_task_a", "close", "norma-uq0.1.1", "--reason", "Done by git-norma", "--json"))
	ctx := context.Background()

	created, err := f.bd.Create(ctx, NewTask{Title: "Task A", Priority: 2, Parent: "norma-uq0.1"})
	require.NoError(t, err)
	assert.Equal(t, "norma-uq0.1.1", created.ID)
	assert.Equal(t, "Task A", created.Title)
	assert.Equal(t, StatusOpen, created.Status)
	assert.Equal(t, []string{"backend", "go"}, created.Labels)
	assert.Equal(t, "norma-uq0.1", created.Parent, "create's output has no parent; the request's is kept")
	assert.Equal(t, time.Date(2026, 11, 22, 6, 27, 39, 614348214, time.UTC), created.CreatedAt)

	claimed, err := f.bd.Claim(ctx, "norma-uq0.1.2", "")
	require.NoError(t, err)
	assert.Equal(t, "norma-uq0.1.2", claimed.ID)
	assert.Equal(t, StatusInProgress, claimed.Status)
	assert.Equal(t, "Norma Test", claimed.Assignee)
	require.NotNil(t, claimed.StartedAt)
	assert.Equal(t, time.Date(2026, 11, 22, 6, 27, 42, 0, time.UTC), *claimed.StartedAt)

	require.NoError(t, f.bd.SetStatus(ctx, "norma-uq0.1.1", StatusClosed, "Done by git-norma"))
}

func TestBDGetRecordedNotes(t *testing.T) {
	// The recording wrote ~22 KB of JSON notes (quotes, non-ASCII) with `update --notes` and read
	// them back with `show`: the backend returns exactly what bd's update echoed.
	raw, err := os.ReadFile(filepath.Join("testdata", "bd", "samples", "update_notes.json"))
	require.NoError(t, err)
	var echoed []struct {
		Notes string `json:"notes"`
	}
	require.NoError(t, json.Unmarshal(raw, &echoed))
	require.Len(t, echoed, 1)
	require.Greater(t, len(echoed[0].Notes), 20000)

	f := newFakeBD(t, entry("show_task_a_notes", "show", "norma-uq0.1.1", "--json"))
	got, err := f.bd.Get(context.Background(), "norma-uq0.1.1")
	require.NoError(t, err)
	assert.Equal(t, echoed[0].Notes, got.Notes)
	assert.Contains(t, got.Notes, `he said \"hi\"`)
	assert.Contains(t, got.Notes, "naïve – 日本")
}

func TestBDNotesRoundTrip(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("- [ ] starts like a flag\n")
	for i := 0; sb.Len() < 30*1024; i++ {
		fmt.Fprintf(&sb, "step %d: \"quoted\" 'single' \\back\\slash $HOME `date` * ? ; | & naïve – 日本\t%d\n", i, i)
	}
	notes := sb.String()

	f := newFakeBD(t, entry("update_notes", "update", "norma-uq0.1.1", "--notes", "*", "--json"))
	ctx := context.Background()
	require.NoError(t, f.bd.Update(ctx, "norma-uq0.1.1", Update{Notes: &notes}))
	calls := f.argvs()
	require.Len(t, calls, 1)
	require.Len(t, calls[0], 5)
	assert.Equal(t, "--notes", calls[0][2])
	assert.True(t, calls[0][3] == notes, "bd receives the notes byte for byte as one argument")

	issue := map[string]any{"id": "norma-uq0.1.1", "title": "Task A", "status": "open", "priority": 2, "notes": notes}
	stdout, err := json.MarshalIndent([]any{issue}, "", "  ")
	require.NoError(t, err)
	f.setTable(entry(f.sample("show_notes", string(stdout), "", 0), "show", "norma-uq0.1.1", "--json"))
	got, err := f.bd.Get(ctx, "norma-uq0.1.1")
	require.NoError(t, err)
	assert.True(t, got.Notes == notes, "notes come back byte for byte")

	// A failing call keeps its error readable: the notes argument is cut in the message.
	f.setTable(entry("err_update_unknown", "update", "norma-uq0.1.1", "--notes", "*", "--json"))
	err = f.bd.Update(ctx, "norma-uq0.1.1", Update{Notes: &notes})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1000)
	assert.Contains(t, err.Error(), "bytes)")
}

func TestBDNotesSizeLimit(t *testing.T) {
	f := newFakeBD(t, entry("update_notes", "update", "norma-uq0.1.1", "--notes", "*", "--json"))
	ctx := context.Background()

	largest := strings.Repeat("n", MaxBDArg)
	require.NoError(t, f.bd.Update(ctx, "norma-uq0.1.1", Update{Notes: &largest}), "the kernel takes a 128 KiB - 1 argument")
	require.Len(t, f.calls(), 1)
	assert.Len(t, f.calls()[0].args[3], MaxBDArg)

	tooBig := largest + "n"
	err := f.bd.Update(ctx, "norma-uq0.1.1", Update{Notes: &tooBig})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "128 KiB")
	assert.Contains(t, err.Error(), "norma-uq0.1.1")
	assert.Len(t, f.calls(), 1, "refused before running bd")
}

func TestBDRefusesBeforeCalling(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, *BD) error
		want string
	}{
		{"get empty id", func(ctx context.Context, b *BD) error { _, err := b.Get(ctx, ""); return err }, "task id is empty"},
		{"close empty id", func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "", StatusClosed, "x") }, "task id is empty"},
		{"status empty id", func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "", StatusOpen, "") }, "task id is empty"},
		{"claim empty id", func(ctx context.Context, b *BD) error { _, err := b.Claim(ctx, "", "me"); return err }, "task id is empty"},
		{"update empty id", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "", Update{Notes: strPtr("x")})
		}, "task id is empty"},
		{"empty update with empty id", func(ctx context.Context, b *BD) error { return b.Update(ctx, "", Update{}) }, "task id is empty"},
		{"id like a flag", func(ctx context.Context, b *BD) error { _, err := b.Get(ctx, "--all"); return err }, `invalid task id "--all"`},
		{"id with a space", func(ctx context.Context, b *BD) error { _, err := b.Get(ctx, "norma-1 norma-2"); return err }, "invalid task id"},
		{"empty status", func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "norma-1", "", "") }, "status is empty"},
		{"title like a flag", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "--force", Priority: PriorityUnset})
			return err
		}, "starts with '-'"},
		{"title like a flag after spaces", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "  -x", Priority: PriorityUnset})
			return err
		}, "starts with '-'"},
		{"empty title", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: " ", Priority: PriorityUnset})
			return err
		}, "title is empty"},
		{"bad priority", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "T", Priority: 5})
			return err
		}, "invalid priority 5"},
		{"parent like a flag", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "T", Priority: PriorityUnset, Parent: "-p"})
			return err
		}, "parent: invalid task id"},
		{"label with a comma", func(ctx context.Context, b *BD) error {
			_, err := b.Create(ctx, NewTask{Title: "T", Priority: PriorityUnset, Labels: []string{"a,b"}})
			return err
		}, `label "a,b"`},
		{"added label with a quote", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-1", Update{AddLabels: []string{`a"b`}})
		}, "cannot be passed to bd"},
		{"label added and removed", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-1", Update{AddLabels: []string{"x"}, RemoveLabels: []string{"x"}})
		}, "both added and removed"},
		{"NUL in notes", func(ctx context.Context, b *BD) error {
			return b.Update(ctx, "norma-1", Update{Notes: strPtr("a\x00b")})
		}, "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBD(t) // any call would be logged, matched or not
			err := tt.call(context.Background(), f.bd)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, f.calls(), "bd is never run")
		})
	}
}

func TestBDErrors(t *testing.T) {
	tests := []struct {
		name     string
		table    []string // "{tmp}/empty_array" is a sample printing [] with exit 0
		call     func(context.Context, *BD) error
		is       error // ErrNotFound, ErrClaimed or nil
		exitCode int   // of the *CallError; -1: not a *CallError
		contains []string
	}{
		{
			name:  "show unknown id: JSON error on stdout, rc 1",
			table: []string{entry("err_show_unknown", "show", "norma-zzzz", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.Get(ctx, "norma-zzzz"); return err },
			is:    ErrNotFound, exitCode: 1,
			contains: []string{"task norma-zzzz", "no issues found matching the provided IDs", `Error fetching norma-zzzz: no issue found matching "norma-zzzz"`},
		},
		{
			name:  "update unknown id: empty stdout, stderr, rc 1",
			table: []string{entry("err_update_unknown", "update", "norma-zzzz", "--notes", "x", "--json")},
			call:  func(ctx context.Context, b *BD) error { return b.Update(ctx, "norma-zzzz", Update{Notes: strPtr("x")}) },
			is:    ErrNotFound, exitCode: 1,
			contains: []string{`Error resolving norma-zzzz: no issue found matching "norma-zzzz"`, "exit status 1"},
		},
		{
			name:  "close unknown id: JSON error, rc 1",
			table: []string{entry("err_close_unknown", "close", "norma-zzzz", "--reason", "Closed by git-norma", "--json")},
			call:  func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "norma-zzzz", StatusClosed, "") },
			is:    ErrNotFound, exitCode: 1,
			contains: []string{`resolving ID norma-zzzz: no issue found matching "norma-zzzz"`},
		},
		{
			name:  "update answering [] with rc 0",
			table: []string{entry("err_label_add_unknown", "update", "norma-zzzz", "--status", "open", "--json")},
			call:  func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "norma-zzzz", StatusOpen, "") },
			is:    ErrNotFound, exitCode: 0,
			contains: []string{"printed no issue for norma-zzzz", "Error resolving norma-zzzz"},
		},
		{
			name:  "claim answering [] with rc 0 and nothing on stderr",
			table: []string{entry("{tmp}/empty_array", "update", "norma-uq0.1.2", "--claim", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.Claim(ctx, "norma-uq0.1.2", ""); return err },
			is:    nil, exitCode: 0,
			contains: []string{"printed no issue for norma-uq0.1.2"},
		},
		{
			name:  "invalid status: JSON error, rc 1",
			table: []string{entry("err_invalid_status", "update", "norma-uq0.1.1", "--status", "done", "--json")},
			call:  func(ctx context.Context, b *BD) error { return b.SetStatus(ctx, "norma-uq0.1.1", "done", "") },
			is:    nil, exitCode: 1,
			contains: []string{`invalid status "done" (built-in: open, in_progress`},
		},
		{
			name:  "claim conflict",
			table: []string{entry("claim_conflict", "update", "norma-uq0.1.2", "--claim", "--actor", "Me", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.Claim(ctx, "norma-uq0.1.2", "Me"); return err },
			is:    ErrClaimed, exitCode: 1,
			contains: []string{"task norma-uq0.1.2", "issue already claimed by Someone"},
		},
		{
			name:  "close refused: blocked",
			table: []string{entry("close_blocked_fail", "close", "norma-uq0.1.2", "--reason", "should fail: blocked", "--json")},
			call: func(ctx context.Context, b *BD) error {
				return b.SetStatus(ctx, "norma-uq0.1.2", StatusClosed, "should fail: blocked")
			},
			is: nil, exitCode: 1,
			contains: []string{"cannot close norma-uq0.1.2: blocked by open issues [norma-uq0.1.1]"},
		},
		{
			name:  "list answering an object",
			table: []string{entry("create_task_a", "list", "--all", "--limit", "0", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.List(ctx); return err },
			is:    nil, exitCode: 0,
			contains: []string{"unexpected output (want a JSON array of issues)", `stdout starts with "{\n  \"acceptance_criteria\"`},
		},
		{
			name:  "list answering a dependency that names no target",
			table: []string{entry("{tmp}/dep_without_target", "list", "--all", "--limit", "0", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.List(ctx); return err },
			is:    nil, exitCode: 0,
			contains: []string{"(item 0): issue norma-a: dependencies: dependency without depends_on_id or id and dependency_type"},
		},
		{
			name:  "ready answering nothing",
			table: []string{entry("no-such-sample", "ready", "--limit", "0", "--json")},
			call:  func(ctx context.Context, b *BD) error { _, err := b.Ready(ctx); return err },
			is:    nil, exitCode: 0,
			contains: []string{"stdout is empty"},
		},
		{
			name:  "create answering an array",
			table: []string{entry("ready", "create", "T", "-t", "task", "--json")},
			call: func(ctx context.Context, b *BD) error {
				_, err := b.Create(ctx, NewTask{Title: "T", Priority: PriorityUnset})
				return err
			},
			is: nil, exitCode: 0,
			contains: []string{"unexpected output (want a JSON object)", `stdout starts with "[`},
		},
		{
			name:  "a call the recording does not know",
			table: nil,
			call:  func(ctx context.Context, b *BD) error { _, err := b.Ready(ctx); return err },
			is:    nil, exitCode: 97,
			contains: []string{"fake-bd: no recorded output for: ready --limit 0 --json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBD(t)
			f.sample("empty_array", "[]\n", "", 0)
			f.sample("dep_without_target", `[{"id":"norma-a","title":"t","priority":1,"dependencies":[{"issue_id":"norma-a","type":"blocks"}]}]`, "", 0)
			var table []string
			for _, line := range tt.table {
				table = append(table, strings.ReplaceAll(line, "{tmp}", f.tmp))
			}
			f.setTable(table...)
			err := tt.call(context.Background(), f.bd)
			require.Error(t, err)
			for _, s := range tt.contains {
				assert.Contains(t, err.Error(), s)
			}
			for _, sentinel := range []error{ErrNotFound, ErrClaimed} {
				assert.Equal(t, sentinel == tt.is, errors.Is(err, sentinel), "errors.Is(err, %v)", sentinel)
			}
			var ce *CallError
			if assert.True(t, errors.As(err, &ce), "a *CallError: %v", err) {
				assert.Equal(t, tt.exitCode, ce.ExitCode)
				assert.NotEmpty(t, ce.Args)
			}
			assert.Len(t, f.calls(), 1)
		})
	}
}

func TestBDCallErrorFields(t *testing.T) {
	f := newFakeBD(t, entry("err_show_unknown", "show", "norma-zzzz", "--json"))
	_, err := f.bd.Get(context.Background(), "norma-zzzz")
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"show", "norma-zzzz", "--json"}, ce.Args)
	assert.Equal(t, 1, ce.ExitCode)
	assert.Equal(t, "no issues found matching the provided IDs", ce.Message)
	assert.Equal(t, "Error fetching norma-zzzz: no issue found matching \"norma-zzzz\"\n", ce.Stderr)
}

func TestBDIgnoresWarningsOnSuccess(t *testing.T) {
	f := newFakeBD(t)
	ready, err := os.ReadFile(filepath.Join("testdata", "bd", "samples", "ready.json"))
	require.NoError(t, err)
	warn := "warning: beads.role not configured\nShowing 3 of 3 ready issues\n"
	f.setTable(
		entry(f.sample("ready_warn", string(ready), warn, 0), "ready", "--limit", "0", "--json"),
		entry(f.sample("list_null", "null\n", warn, 0), "list", "--all", "--limit", "0", "--json"))

	tasks, err := f.bd.Ready(context.Background())
	require.NoError(t, err)
	assert.Len(t, tasks, 3)

	tasks, err = f.bd.List(context.Background())
	require.NoError(t, err, "an empty backlog may print null")
	assert.Empty(t, tasks)
}

func TestBDTimeoutKillsProcessGroup(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bd")
	installScript(t, filepath.Join("testdata", "bd", "fake-bd-hang"), bin)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	t.Setenv("FAKE_BD_HANG_PID", pidFile)

	b := &BD{Bin: bin, Dir: t.TempDir(), Timeout: 300 * time.Millisecond}
	start := time.Now()
	_, err := b.List(context.Background())
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "bd list timed out after 300ms")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// The child keeps stdout open: only killing the whole group returns before bdWaitDelay.
	assert.Less(t, elapsed, 3*time.Second)

	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return processGone(pid) }, 3*time.Second, 20*time.Millisecond, "bd's child was killed")
}

// processGone reports whether pid no longer runs (a zombie waiting for a reaper counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// Fields after the command name in parentheses: the first is the state.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

func TestBDHonoursCallerContext(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bd")
	installScript(t, filepath.Join("testdata", "bd", "fake-bd-hang"), bin)
	b := &BD{Bin: bin, Dir: t.TempDir(), Timeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Ready(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, err.Error(), "timed out after 1m0s")
	assert.Less(t, time.Since(start), 3*time.Second)
}

func TestBDNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := NewBD(t.TempDir()).List(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bd is not installed or not on PATH")

	_, err = (&BD{Bin: filepath.Join(t.TempDir(), "bd"), Dir: t.TempDir()}).List(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bd is not installed or not on PATH")
}

func TestBDMissingDirIsNotMissingBD(t *testing.T) {
	f := newFakeBD(t)
	f.bd.Dir = filepath.Join(f.dir, "gone")
	_, err := f.bd.List(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "repository directory")
	assert.NotContains(t, err.Error(), "not installed")
}

func TestBDEnvironment(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "bd")
	script := "#!/bin/sh\nprintf '[{\"id\":\"norma-1\",\"title\":\"%s|%s|%s|%s\"}]' \"$GIT_DIR\" \"$BD_JSON_ENVELOPE\" \"$BEADS_ACTOR\" \"$PWD\"\n"
	require.NoError(t, os.WriteFile(bin, []byte(script), 0o755))
	t.Setenv("GIT_DIR", "/elsewhere/.git")
	t.Setenv("BD_JSON_ENVELOPE", "1")
	t.Setenv("PWD", "/stale")

	b := &BD{Bin: bin, Dir: dir, Env: []string{"BEADS_ACTOR=norma"}}
	tasks, err := b.List(context.Background())
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	assert.Equal(t, "||norma|"+dir, tasks[0].Title)
}

func TestBDAvailable(t *testing.T) {
	bin := t.TempDir()
	installScript(t, filepath.Join("testdata", "bd", "fake-bd"), filepath.Join(bin, "bd"))
	workspace := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(workspace, ".beads"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(workspace, ".beads", "metadata.json"), []byte(`{"backend":"dolt"}`), 0o644))
	jsonlOnly := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(jsonlOnly, ".beads"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(jsonlOnly, ".beads", "issues.jsonl"), nil, 0o644))
	metadataDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(metadataDir, ".beads", "metadata.json"), 0o755))

	tests := []struct {
		name  string
		path  string
		dir   string
		avail bool
	}{
		{"bd and a workspace", bin, workspace, true},
		{"bd and only issues.jsonl", bin, jsonlOnly, false},
		{"bd and no .beads", bin, t.TempDir(), false},
		{"metadata.json is a directory", bin, metadataDir, false},
		{"workspace but no bd", t.TempDir(), workspace, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			assert.Equal(t, tt.avail, BDAvailable(tt.dir))
		})
	}
}

// TestBDClaimRaceRetried: a claim that loses to a concurrent transaction on the Dolt server
// (bd prints `Error 1213 (40001): serialization failure`, as the contract records) is tried
// again, a bounded number of times, and then is ErrClaimed: lost, like any claim someone holds.
func TestBDClaimRaceRetried(t *testing.T) {
	f := newFakeBD(t)
	f.sample("claim_race", "", "Error claiming norma-uq0.1.2: Error 1213 (40001): serialization failure\n", 1)
	f.setTable(entry(f.tmp+"/claim_race", "update", "norma-uq0.1.2", "--claim", "--actor", "w1", "--json"))
	start := time.Now()
	_, err := f.bd.Claim(context.Background(), "norma-uq0.1.2", "w1")
	require.ErrorIs(t, err, ErrClaimed)
	assert.Contains(t, err.Error(), "serialization failure")
	assert.Len(t, f.calls(), claimAttempts)
	assert.GreaterOrEqual(t, time.Since(start), time.Duration(claimAttempts-1)*50*time.Millisecond, "paused between tries")
}

// bd 1.0.5 prints a task's metadata as a JSON object (types.Issue.Metadata, a raw message): git-norma's
// state is its "norma" key, in whatever key order the database gives back.
func TestBDStateInMetadata(t *testing.T) {
	f := newFakeBD(t)
	ctx := context.Background()
	show := func(metadata string) (Task, error) {
		issue := `[{"id":"norma-uq0.1.1","title":"Task A","status":"open","priority":2,"notes":"call Ann first"` + metadata + `}]`
		f.setTable(entry(f.sample("show_meta", issue, "", 0), "show", "norma-uq0.1.1", "--json"))
		return f.bd.Get(ctx, "norma-uq0.1.1")
	}
	got, err := show(`,"metadata":{"team":"platform","norma":{"phase":"do","norma_state":1}}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"phase":"do","norma_state":1}`, string(got.State))
	assert.Equal(t, "call Ann first", got.Notes)

	for _, none := range []string{``, `,"metadata":null`, `,"metadata":{}`, `,"metadata":{"team":"platform"}`, `,"metadata":{"norma":null}`} {
		got, err := show(none)
		require.NoError(t, err, none)
		assert.Nil(t, got.State, none)
	}
	_, err = show(`,"metadata":"not an object"`)
	require.ErrorContains(t, err, "metadata")
	assert.True(t, f.bd.KeepsStateApart())
}

// bd 1.0.5 in server mode prints its advice before every error (recorded from a clone of a
// workspace made by `bd init --server`): an error message keeps the error, not the advice.
func TestCallErrorLeavesBDsAdviceOut(t *testing.T) {
	stderr := "Warning: /tmp/w4/.beads has permissions 0755 (recommended: 0700). Run: chmod 700 /tmp/w4/.beads\n" +
		"Warning: dolt_server_port in metadata.json is deprecated (can cause cross-project data leakage).\n" +
		"  The port file (.beads/dolt-server.port) is now the primary source.\n" +
		"  Remove dolt_server_port from .beads/metadata.json to silence this warning.\n" +
		"warning: beads.role not configured (GH#2950).\n" +
		"  Fix: git config beads.role maintainer\n" +
		"  Or:  git config beads.role contributor\n" +
		"Error claiming norma-t02: issue already claimed by w3\n"
	err := &CallError{Args: []string{"update", "norma-t02", "--claim", "--json"}, ExitCode: 1, Stderr: stderr}
	assert.Equal(t, "bd update norma-t02 --claim --json: exit status 1: Error claiming norma-t02: issue already claimed by w3", err.Error())
	// advice alone is all there is to say
	err.Stderr = "Warning: /tmp/w4/.beads has permissions 0755 (recommended: 0700). Run: chmod 700 /tmp/w4/.beads\n"
	assert.Contains(t, err.Error(), "has permissions 0755")
}

// bd 1.3 keeps leases of claims (recorded samples bd13_*, RECORDED-bd-1.3.txt): a task shows
// when its lease runs out, a heartbeat renews it until it is lost, and a reclaim says whether
// it gave the task back.
func TestBDLeases(t *testing.T) {
	f := newFakeBD(t,
		entry("bd13_show_stale", "show", "norma-l1", "--json"),
		entry("bd13_heartbeat", "heartbeat", "norma-l1", "--json"),
		entry("bd13_heartbeat_reclaimed", "heartbeat", "norma-gone", "--json"),
		entry("bd13_reclaim", "reclaim", "--id", "norma-l1", "--older-than", "30s", "--json"),
		entry("bd13_reclaim_none", "reclaim", "--id", "norma-live", "--older-than", "30s", "--json"))
	ctx := context.Background()
	got, err := f.bd.Get(ctx, "norma-l1")
	require.NoError(t, err)
	require.NotNil(t, got.LeaseExpires)
	assert.Equal(t, time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC), got.LeaseExpires.UTC())

	require.NoError(t, f.bd.Heartbeat(ctx, "norma-l1"))
	err = f.bd.Heartbeat(ctx, "norma-gone")
	require.ErrorContains(t, err, "issue not claimable")

	done, err := f.bd.Reclaim(ctx, "norma-l1", 30*time.Second)
	require.NoError(t, err)
	assert.True(t, done)
	done, err = f.bd.Reclaim(ctx, "norma-live", 30*time.Second)
	require.NoError(t, err)
	assert.False(t, done, "a lease renewed meanwhile is not reclaimed")

	// bd 1.0.5 prints no lease: git-norma keeps its own
	f.setTable(entry("show_task_b", "show", "norma-uq0.1.2", "--json"))
	got, err = f.bd.Get(ctx, "norma-uq0.1.2")
	require.NoError(t, err)
	assert.Nil(t, got.LeaseExpires)
}
