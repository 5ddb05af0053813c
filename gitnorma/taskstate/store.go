package taskstate

import (
	"encoding/json"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// keepsStateApart says the tracker keeps git-norma's state of a task out of its notes (bd: in
// the task's metadata): git-norma then never writes the notes while it works, so nothing a
// person appends to them meanwhile is written over.
func keepsStateApart(tr tracker.Tracker) bool {
	k, ok := tr.(tracker.StateKeeper)
	return ok && k.KeepsStateApart()
}

// Stored is git-norma's state of a task as read from the tracker.
type Stored struct {
	State
	// apart: the tracker keeps the state out of the notes (see keepsStateApart).
	apart bool
	// InNotes: the notes still hold a state, which a tracker that keeps it apart got from an
	// older git-norma; the next write moves it out, leaving people's text (ForeignNotes).
	InNotes bool
}

// Read reads git-norma's state of t: where tr keeps it apart from the notes when it is
// there, else from the notes (the embedded backlog's place for it, and where a git-norma
// before this one left it in bd). Where the state is kept apart, people's notes are never
// carried along — whatever their size — but to take an older git-norma's state out of them.
func Read(tr tracker.Tracker, t tracker.Task) (Stored, error) {
	if !keepsStateApart(tr) {
		st, err := Decode(t.Notes)
		return Stored{State: st}, err
	}
	s := Stored{apart: true, InNotes: stateStart(t.Notes) >= 0}
	s.Version = version
	if len(t.State) > 0 {
		st, err := decodeStateJSON(t.State)
		if err != nil {
			return s, err
		}
		s.State = st
	}
	if s.InNotes {
		old, err := decodeNotes(t.Notes, 0)
		if err != nil {
			return s, err
		}
		if len(t.State) == 0 {
			s.State = old // an older git-norma's; the copy apart, when there is one, is newer
		}
		s.ForeignNotes = old.ForeignNotes
	}
	return s, nil
}

// decodeStateJSON reads a state kept apart from the notes: the JSON object Encode would put
// in them, in whatever key order the tracker's database gives it back.
func decodeStateJSON(raw json.RawMessage) (State, error) {
	var st State
	if err := json.Unmarshal(raw, &st); err != nil || st.Version < 1 {
		why := "no norma_state version"
		if err != nil {
			why = err.Error()
		}
		return State{}, fmt.Errorf("the task's metadata key %q is not a git-norma state (%s): remove it (bd update <id> --unset-metadata %s) to start the task's state afresh (its strike count and resume point are then lost)",
			tracker.StateKey, why, tracker.StateKey)
	}
	if st.Version > version {
		return State{}, fmt.Errorf("the task's metadata holds a git-norma state of version %d; this git-norma reads up to %d: upgrade git-norma", st.Version, version)
	}
	st.ForeignNotes = "" // never kept apart
	return st, nil
}

// Write is the tracker update that stores s (redacted), and the text that identifies
// what it wrote. A tracker that keeps the state apart gets the notes only to take out an older
// git-norma's state. Otherwise the update's edit, applied to the notes as they are at the
// write where the tracker can (the embedded backlog), keeps a note appended meanwhile, and
// change makes the same change to the state found there.
func Write(s Stored, redact redact.Redactor, change func(*State)) (tracker.Update, string, error) {
	if s.apart {
		people := s.ForeignNotes
		st := s.State
		st.ForeignNotes = ""
		data, err := st.EncodeState()
		if err != nil {
			return tracker.Update{}, "", err
		}
		data = redact.Apply(data)
		u := tracker.Update{State: json.RawMessage(data)}
		if s.InNotes {
			u.Notes = &people
		}
		return u, data, nil
	}
	text, err := s.Encode()
	if err != nil {
		return tracker.Update{}, "", err
	}
	text = redact.Apply(text)
	edit := func(current string) (string, error) {
		now, err := Decode(current)
		if err != nil {
			// People's text past what git-norma carries along, added while the run worked, is
			// kept whole (the next run asks to move it); a state that does not read is replaced,
			// as Notes would.
			if now, err = decodeNotes(current, 0); err != nil {
				return text, nil
			}
		}
		st := s.State
		if change != nil {
			st = now
			change(&st)
		}
		st.ForeignNotes = now.ForeignNotes
		edited, err := st.Encode()
		return redact.Apply(edited), err
	}
	return tracker.Update{Notes: &text, EditNotes: edit}, text, nil
}
