package gitnorma

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
)

// The task's journal in its state: the lines of earlier runs a run catches up on, and the
// progress it hands its agents.

// catchUp adds to the journal, in time order and once, the lines of steps a dead run recorded
// but never got into the task state (a built-in Plan or Act rides on the next write, which
// never came); they go out with this run's first write. The resume data and labels stay as
// the last write put them: a step they do not include is simply run again.
func (m *taskMirror) catchUp(lines []taskstate.JournalLine) {
	have := map[[2]string]bool{}
	for _, l := range m.state.Journal {
		have[journalKey(l)] = true
	}
	// Lines older than the journal's oldest may have been folded into its summary already.
	var oldest string
	if m.state.Folded != "" && len(m.state.Journal) > 0 {
		oldest = m.state.Journal[0].TS
	}
	added := false
	for _, l := range lines {
		if !have[journalKey(l)] && l.TS >= oldest {
			m.state.Journal = append(m.state.Journal, l)
			have[journalKey(l)] = true
			added = true
		}
	}
	if added {
		slices.SortStableFunc(m.state.Journal, func(a, b taskstate.JournalLine) int { return strings.Compare(a.TS, b.TS) })
	}
}

// priorProgress renders the task's journal (its earlier runs' steps) in progress.md's
// template, with what was folded away said first.
func (m *taskMirror) priorProgress() string {
	var b strings.Builder
	if m.state.Folded != "" {
		fmt.Fprintf(&b, "_Earlier: %s._\n\n", m.state.Folded)
	}
	entries := make([]JournalEntry, 0, len(m.state.Journal))
	for _, l := range m.state.Journal {
		ts, _ := time.Parse(time.RFC3339Nano, l.TS)
		entries = append(entries, JournalEntry{TS: ts, Kind: notes.KindStep, Task: m.taskID, Run: l.Run, Step: l.Step,
			Role: l.Role, Status: l.Status, Summary: l.Summary,
			Stdout: stepLogPath(l, "stdout.txt"), Stderr: stepLogPath(l, "stderr.txt")})
	}
	b.WriteString(RenderJournal(entries))
	return b.String()
}

// stepLogPath is an earlier run's step log, relative to the repository root ("" for a line
// that is no step's, such as a lease that ran out).
func stepLogPath(l taskstate.JournalLine, name string) string {
	if l.Step == 0 {
		return ""
	}
	return filepath.ToSlash(filepath.Join(".norma", "runs", l.Run, "steps", loop.StepDirName(l.Step, loop.Role(l.Role)), "logs", name))
}

func journalKey(l taskstate.JournalLine) [2]string { return [2]string{l.Run, strconv.Itoa(l.Step)} }
