package gitnorma

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
)

// JournalEntry is one line of a run's journal, from the store (with the step's progress
// details when its files are still on disk) or, for runs made elsewhere, from git notes.
type JournalEntry struct {
	TS         time.Time `json:"ts"`
	Kind       string    `json:"kind"`
	Task       string    `json:"task_id"`
	Run        string    `json:"run_id"`
	Step       int       `json:"step_index,omitempty"`
	Role       string    `json:"role,omitempty"`
	Iteration  int       `json:"iteration,omitempty"`
	Status     string    `json:"status"`
	StopReason string    `json:"stop_reason,omitempty"`
	Summary    string    `json:"summary"`
	Title      string    `json:"title,omitempty"`
	Details    []string  `json:"details,omitempty"`
	Stdout     string    `json:"stdout,omitempty"`
	Stderr     string    `json:"stderr,omitempty"`
	Commit     string    `json:"commit,omitempty"`
	Source     string    `json:"source"`
	// Usage is the model, tokens and cost the step's agent CLI reported.
	Usage *loop.Usage `json:"usage,omitempty"`
}

// Journal returns the journal of a run (r-...) or of every run of a task, oldest first. Runs
// this machine's store does not know are read from refs/notes/norma.
func (h *History) Journal(ctx context.Context, target string) ([]JournalEntry, error) {
	isRun := strings.HasPrefix(target, "r-")
	if !isRun {
		if err := h.validID(target); err != nil {
			return nil, err
		}
	}
	st, err := h.repo.OpenStore(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs, err := journalRuns(ctx, st, target, isRun)
	if err != nil {
		return nil, err
	}
	var entries []JournalEntry
	for _, r := range runs {
		e, err := h.runJournal(ctx, st, r)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e...)
	}
	if len(entries) > 0 {
		return entries, nil
	}
	entries, err = h.repo.notesJournal(ctx, target, isRun)
	if err == nil && len(entries) == 0 {
		return nil, failf("list runs with: git norma status; runs made in another clone: git norma notes pull origin (or another remote), then log again",
			"no journal for %s in the store or in %s", target, notes.Ref)
	}
	return entries, err
}

func journalRuns(ctx context.Context, st *store.Store, target string, isRun bool) ([]store.Run, error) {
	if isRun {
		r, err := st.Run(ctx, target)
		if err != nil {
			return nil, nil // maybe in notes
		}
		return []store.Run{r}, nil
	}
	runs, err := st.RunsForTask(ctx, target, 0)
	slices.Reverse(runs)
	return runs, err
}

// runJournal rebuilds a run's entries from its step rows and their outputs (or, for a step
// committed before rows held them, its output.json).
func (h *History) runJournal(ctx context.Context, st *store.Store, r store.Run) ([]JournalEntry, error) {
	steps, err := st.Steps(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	var entries []JournalEntry
	for _, s := range steps {
		e := JournalEntry{TS: s.EndedAt, Kind: notes.KindStep, Task: r.TaskID, Run: r.ID, Step: s.Index, Role: s.Role,
			Iteration: s.Iteration, Status: s.Status, Summary: s.Summary, Source: "store"}
		out, ok := storedOutput(s)
		if !ok {
			out, ok = readStepOutput(filepath.Join(h.repo.Root, filepath.FromSlash(s.Dir)))
		}
		if ok {
			e.Status, e.StopReason, e.Title, e.Details = out.Status, out.StopReason, out.Progress.Title, out.Progress.Details
			e.Stdout, e.Stderr, e.Usage = out.Logs.StdoutPath, out.Logs.StderrPath, out.Usage
		}
		entries = append(entries, e)
	}
	events, err := st.Events(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	for _, ev := range events {
		if ev.Type == "landed" || ev.Type == "land_refused" {
			var data struct {
				Commit string `json:"commit"`
			}
			_ = json.Unmarshal([]byte(ev.DataJSON), &data)
			entries = append(entries, JournalEntry{TS: ev.TS, Kind: notes.KindLand, Task: r.TaskID, Run: r.ID, Status: ev.Type,
				Summary: ev.Message, Commit: data.Commit, Source: "store"})
		}
	}
	return entries, nil
}

func readStepOutput(dir string) (loop.Output, bool) {
	var out loop.Output
	data, err := os.ReadFile(filepath.Join(dir, "output.json"))
	return out, err == nil && json.Unmarshal(data, &out) == nil
}

// notesJournal reads the entries of a task or run from git notes.
func (r *Repo) notesJournal(ctx context.Context, target string, isRun bool) ([]JournalEntry, error) {
	all, err := r.NotesJournal().All(ctx)
	if err != nil {
		return nil, err
	}
	var entries []JournalEntry
	for _, n := range all {
		if (isRun && n.Run != target) || (!isRun && n.Task != target) {
			continue
		}
		ts, _ := time.Parse(time.RFC3339Nano, n.TS)
		entries = append(entries, JournalEntry{TS: ts, Kind: n.Kind, Task: n.Task, Run: n.Run, Step: n.Step, Iteration: n.Iteration, Role: n.Role,
			Status: n.Status, Summary: n.Summary, Commit: n.Commit, Source: "notes"})
	}
	return entries, nil
}

// RenderJournal prints entries in the spec's progress.md template (section 8.5).
func RenderJournal(entries []JournalEntry) string {
	var b strings.Builder
	for _, e := range entries {
		if e.Kind == notes.KindLand {
			fmt.Fprintf(&b, "## %s — LAND — %s\n**Task:** %s  \n**Run:** %s\n\n%s\n\n", e.TS.UTC().Format(time.RFC3339), e.Status, e.Task, e.Run, e.Summary)
			continue
		}
		status := e.Status
		if status == "fail" {
			status = loop.StatusError
		}
		details := e.Details
		if e.Usage != nil {
			details = append(slices.Clone(details), fmt.Sprintf("agent: %s %s, %d input / %d output tokens, $%.4f",
				e.Usage.Agent, e.Usage.Model, e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CostUSD))
		}
		b.WriteString(loop.ProgressEntry(e.Task, e.Run, loop.StepRecord{
			Index: e.Step, Role: loop.Role(e.Role), Iteration: e.Iteration, EndedAt: e.TS,
			Output: loop.Output{Status: status, StopReason: cmp.Or(e.StopReason, loop.StopNone), Summary: loop.Summary{Text: e.Summary},
				Progress: loop.Progress{Title: e.Title, Details: details},
				Logs:     loop.Logs{StdoutPath: cmp.Or(e.Stdout, notHere), StderrPath: cmp.Or(e.Stderr, notHere)}},
		}))
	}
	return b.String()
}

// notHere stands for the log of a step made on another machine.
const notHere = "(not on this machine)"
