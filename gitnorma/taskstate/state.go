// Package taskstate is git-norma's state of a task as the tracker keeps it (spec 0, "Task
// Notes as State Object"): its JSON, capped and folded to fit, read from and written to the
// task's notes (the embedded backlog) or apart from them (bd's metadata), beside people's own
// notes, which it never loses.
package taskstate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// Cap bounds the State written into a task's notes: bd caps one argv at 128 KiB and bd
// before 1.0.5 breaks once an issue's JSON passes ~64 KiB (beads CONTRACT §6).
const Cap = 32 << 10

// maxForeignNotes is how much of people's own notes git-norma carries along beside its state.
const maxForeignNotes = 16 << 10

// State is the JSON git-norma keeps in a task's notes (spec 0, "Task Notes as State
// Object"): the latest step outputs and a compact journal, so a run on this or another
// machine can resume where the last one stopped. People's notes live beside it (ForeignNotes,
// not part of the JSON: see Encode).
type State struct {
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
	Completion string `json:"completion,omitempty"`
	// LeaseUntil is when the claim of the run working on the task runs out unless renewed
	// (RFC 3339, UTC; bd only): a loop on any machine reopens the task after it (reaper.go).
	LeaseUntil string        `json:"lease_until,omitempty"`
	Journal    []JournalLine `json:"journal"`
	// Folded summarises journal lines dropped to stay under Cap.
	Folded string `json:"folded,omitempty"`
	// ForeignNotes are people's notes: written after the state, never inside it (states
	// written before this were read with them inside, as foreign_notes).
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

// version is the current State format.
const version = 1

// Decode reads a task's notes: git-norma's state (the JSON object starting
// {"norma_state": at the start of a line) and people's text before and after it (bd's
// --append-notes and note append), kept in ForeignNotes. Empty notes give a fresh state. A
// git-norma state that does not read is an error saying what to do, never taken for people's
// text: that would silently reset the strike count and the resume state.
func Decode(notes string) (State, error) {
	return decodeNotes(notes, maxForeignNotes)
}

// decodeNotes is Decode with limit on people's text (0: none).
func decodeNotes(notes string, limit int) (State, error) {
	st := State{Version: version}
	at := stateStart(notes)
	if at < 0 {
		return st, foreign(&st, strings.TrimSpace(notes), limit)
	}
	dec := json.NewDecoder(strings.NewReader(notes[at:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return st, badState(err)
	}
	var probe struct {
		Version int `json:"norma_state"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return st, badState(err)
	}
	if probe.Version > version {
		return st, fmt.Errorf("the task's notes hold a git-norma state of version %d; this git-norma reads up to %d: upgrade git-norma", probe.Version, version)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, badState(err)
	}
	// Written before people's text lived beside the state, it was kept inside it.
	parts := []string{strings.TrimSpace(notes[:at]), strings.TrimSpace(st.ForeignNotes), strings.TrimSpace(notes[at+int(dec.InputOffset()):])}
	st.ForeignNotes = ""
	return st, foreign(&st, strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "\n\n"), limit)
}

// stateMark begins git-norma's state in a task's notes.
const stateMark = `{"norma_state":`

// stateStart is where git-norma's state begins in notes (-1: nowhere): at a line start.
func stateStart(notes string) int {
	if strings.HasPrefix(notes, stateMark) {
		return 0
	}
	if i := strings.Index(notes, "\n"+stateMark); i >= 0 {
		return i + 1
	}
	return -1
}

func badState(err error) error {
	return fmt.Errorf("the git-norma state in the task's notes does not read (%v): restore the line that starts with %s from the tracker's history, or delete that line to start the task's state afresh (its strike count and resume point are then lost)", err, stateMark)
}

// foreign keeps people's text beside the state, up to limit bytes (0: any).
func foreign(st *State, text string, limit int) error {
	if limit > 0 && len(text) > limit {
		return fmt.Errorf("the task's notes hold %d KiB besides git-norma's state, more than git-norma carries along (limit %d KiB); move them to the description or a comment, then run again",
			(len(text)+1023)>>10, limit>>10)
	}
	st.ForeignNotes = text
	return nil
}

// Encode renders the notes: the state as one JSON line no larger than Cap (shedding
// evidence output tails, then the oldest journal lines, then the step outputs), followed by
// people's text (ForeignNotes) as they wrote it.
func (s State) Encode() (string, error) {
	people := s.ForeignNotes
	s.ForeignNotes = ""
	state, err := s.EncodeState()
	if err != nil || people == "" {
		return state, err
	}
	return state + "\n\n" + people, nil
}

func (s State) EncodeState() (string, error) {
	s.Version = version
	data, err := json.Marshal(s)
	if err != nil || len(data) <= Cap {
		return string(data), err
	}
	s.Check = withoutTails(s.Check)
	for len(data) > Cap && len(s.Journal) > 4 {
		s = s.fold(len(s.Journal) / 2)
		if data, err = json.Marshal(s); err != nil {
			return "", err
		}
	}
	if len(data) > Cap {
		s.Check, s.Act = nil, nil
		data, err = json.Marshal(s)
	}
	if err == nil && len(data) > Cap {
		err = fmt.Errorf("the task state is %d KiB even after folding its journal (cap %d KiB)", len(data)>>10, Cap>>10)
	}
	return string(data), err
}

// fold drops the n oldest journal lines into the Folded summary.
func (s State) fold(n int) State {
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
	cp.Evidence = slices.Clone(c.Evidence)
	for i := range cp.Evidence {
		cp.Evidence[i].OutputTail = ""
	}
	return &cp
}
