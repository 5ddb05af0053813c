package gitnorma

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// TaskStateCap bounds the TaskState written into a task's notes: bd caps one argv at 128 KiB
// and bd before 1.0.5 breaks once an issue's JSON passes ~64 KiB (beads CONTRACT §6).
const TaskStateCap = 32 << 10

// maxForeignNotes is how much of a user's own notes git-norma will carry inside its state.
const maxForeignNotes = 16 << 10

// TaskState is the JSON git-norma keeps in a task's notes (spec 0, "Task Notes as State
// Object"): the latest step outputs and a compact journal, so a run on this or another
// machine can resume where the last one stopped. Notes git-norma did not write are kept, inside
// the state, in ForeignNotes.
type TaskState struct {
	// Version marks the notes as git-norma's and says how to read them.
	Version   int    `json:"norma_state"`
	RunID     string `json:"run_id,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Step      int    `json:"step,omitempty"`
	// Phase is the last completed role; Head the task branch head after it.
	Phase string      `json:"phase,omitempty"`
	Head  string      `json:"head,omitempty"`
	Plan  *loop.Plan  `json:"plan,omitempty"`
	Do    *loop.Do    `json:"do,omitempty"`
	Check *loop.Check `json:"check,omitempty"`
	Act   *loop.Act   `json:"act,omitempty"`
	// LastFailure is fed to the next run's first Plan.
	LastFailure *loop.Failure `json:"last_failure,omitempty"`
	// FailedRuns counts consecutive runs whose checks failed; at 3 the task is blocked.
	FailedRuns int    `json:"failed_runs,omitempty"`
	Blocked    string `json:"blocked,omitempty"`
	// Completion says why a parent whose children are all closed is still open.
	Completion string        `json:"completion,omitempty"`
	Journal    []JournalLine `json:"journal"`
	// Folded summarises journal lines dropped to stay under TaskStateCap.
	Folded       string `json:"folded,omitempty"`
	ForeignNotes string `json:"foreign_notes,omitempty"`
}

// JournalLine is one step in the compact journal of the task state.
type JournalLine struct {
	TS      string `json:"ts"`
	Run     string `json:"run"`
	Step    int    `json:"step"`
	Role    string `json:"role"`
	Status  string `json:"status"`
	Summary string `json:"summary"`
}

// taskStateVersion is the current TaskState format.
const taskStateVersion = 1

// DecodeTaskState reads a task's notes. Empty notes give a fresh state; notes that are not a
// TaskState are somebody else's and are kept verbatim in ForeignNotes.
func DecodeTaskState(notes string) (TaskState, error) {
	st := TaskState{Version: taskStateVersion}
	trimmed := strings.TrimSpace(notes)
	if trimmed == "" {
		return st, nil
	}
	if strings.HasPrefix(trimmed, "{") {
		var probe struct {
			Version int `json:"norma_state"`
		}
		if json.Unmarshal([]byte(trimmed), &probe) == nil && probe.Version > 0 {
			if probe.Version > taskStateVersion {
				return st, fmt.Errorf("the task's notes hold a git-norma state of version %d; this git-norma reads up to %d: upgrade git-norma", probe.Version, taskStateVersion)
			}
			err := json.Unmarshal([]byte(trimmed), &st)
			return st, err
		}
	}
	if len(notes) > maxForeignNotes {
		return st, fmt.Errorf("the task's notes (%d KiB) were not written by git-norma and are too large to keep inside its state (limit %d KiB); move them to the description or a comment, then run again",
			len(notes)>>10, maxForeignNotes>>10)
	}
	st.ForeignNotes = notes
	return st, nil
}

// Encode renders the state as notes no larger than TaskStateCap, shedding detail oldest first:
// evidence output tails, then journal lines (folded into a summary), then the step outputs.
func (s TaskState) Encode() (string, error) {
	s.Version = taskStateVersion
	data, err := json.Marshal(s)
	if err != nil || len(data) <= TaskStateCap {
		return string(data), err
	}
	s.Check = withoutTails(s.Check)
	for len(data) > TaskStateCap && len(s.Journal) > 4 {
		s = s.fold(len(s.Journal) / 2)
		if data, err = json.Marshal(s); err != nil {
			return "", err
		}
	}
	if len(data) > TaskStateCap {
		s.Check, s.Act = nil, nil
		data, err = json.Marshal(s)
	}
	if err == nil && len(data) > TaskStateCap {
		err = fmt.Errorf("the task state is %d KiB even after folding its journal (cap %d KiB)", len(data)>>10, TaskStateCap>>10)
	}
	return string(data), err
}

// fold drops the n oldest journal lines into the Folded summary.
func (s TaskState) fold(n int) TaskState {
	counts := map[string]int{}
	runs := map[string]bool{}
	for _, l := range s.Journal[:n] {
		counts[l.Status]++
		runs[l.Run] = true
	}
	summary := fmt.Sprintf("%d earlier steps of %d run(s) (ok %d, fail %d, skipped %d) up to %s", n, len(runs),
		counts["ok"], counts["fail"], counts["skipped"], s.Journal[n-1].TS)
	if s.Folded != "" {
		summary = s.Folded + "; " + summary
	}
	s.Folded = summary
	s.Journal = append([]JournalLine(nil), s.Journal[n:]...)
	return s
}

func withoutTails(c *loop.Check) *loop.Check {
	if c == nil {
		return nil
	}
	cp := *c
	cp.Evidence = make([]loop.Evidence, len(c.Evidence))
	for i, e := range c.Evidence {
		e.OutputTail = ""
		cp.Evidence[i] = e
	}
	return &cp
}
