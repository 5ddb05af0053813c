package taskstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

func TestDecodeTaskState(t *testing.T) {
	for _, tc := range []struct {
		name, notes, foreign, wantErr string
		run                           string
	}{
		{name: "empty", notes: ""},
		{name: "whitespace", notes: "  \n"},
		{name: "ours", notes: `{"norma_state":1,"run_id":"r-1","journal":[]}`, run: "r-1"},
		{name: "a human's text", notes: "call Ann first", foreign: "call Ann first"},
		{name: "someone else's JSON", notes: `{"version":1,"phase":"plan"}`, foreign: `{"version":1,"phase":"plan"}`},
		{name: "newer state", notes: `{"norma_state":9}`, wantErr: "version 9"},
		{name: "huge foreign notes", notes: strings.Repeat("x", maxForeignNotes+1), wantErr: "more than git-norma carries along"},
		// bd update --append-notes and bd note append after the state (a newline between)
		{name: "a note appended after ours", notes: `{"norma_state":1,"run_id":"r-1","failed_runs":2,"journal":[]}` + "\ncall Ann first",
			foreign: "call Ann first", run: "r-1"},
		{name: "notes before and after ours", notes: "before\n" + `{"norma_state":1,"run_id":"r-1","journal":[]}` + "\n\nafter\nmore",
			foreign: "before\n\nafter\nmore", run: "r-1"},
		{name: "written with people's text inside", notes: `{"norma_state":1,"run_id":"r-1","journal":[],"foreign_notes":"inside"}` + "\nappended",
			foreign: "inside\n\nappended", run: "r-1"},
		{name: "a mention mid-line is not ours", notes: `see {"norma_state":1} in the docs`, foreign: `see {"norma_state":1} in the docs`},
		{name: "ours, broken", notes: `{"norma_state":1,"run_id":"r-1",` + "\nappended", wantErr: "does not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Decode(tc.notes)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.foreign, st.ForeignNotes)
			assert.Equal(t, tc.run, st.RunID)
		})
	}
}

// A state far over the cap is folded to fit: evidence tails go first, then old journal lines
// become a summary; the foreign notes and the latest plan survive, and it decodes back.
func TestEncodeCapsTheState(t *testing.T) {
	st := State{ForeignNotes: "remember: ask Ann", Plan: &loop.Plan{TaskID: "norma-a1", Goal: "g"}}
	st.Check = &loop.Check{Evidence: []loop.Evidence{{CheckID: "C1", OutputTail: strings.Repeat("o", 2048)}}}
	for i := range 2000 {
		st.Journal = append(st.Journal, JournalLine{TS: fmt.Sprintf("2026-11-22T07:00:%02d.000Z", i%60), Run: fmt.Sprintf("r-%d", i/8),
			Step: i, Role: "do", Status: "ok", Summary: strings.Repeat("s", 40)})
	}
	text, err := st.Encode()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(text), Cap)
	back, err := Decode(text)
	require.NoError(t, err)
	assert.Equal(t, "remember: ask Ann", back.ForeignNotes)
	assert.Equal(t, "g", back.Plan.Goal)
	assert.Contains(t, back.Folded, "earlier steps")
	assert.Equal(t, 1999, back.Journal[len(back.Journal)-1].Step, "the newest lines are kept")
	assert.Empty(t, back.Check.Evidence[0].OutputTail)
}

// A ~30 KiB state (under the cap) round-trips unchanged.
func TestEncodeRoundTrip30KiB(t *testing.T) {
	st := State{RunID: "r-1", FailedRuns: 2, Blocked: "why"}
	for i := 0; len(mustJSON(t, st)) < 30<<10; i++ {
		st.Journal = append(st.Journal, JournalLine{TS: "2026-11-22T07:00:00.000Z", Run: "r-1", Step: i, Role: "plan", Status: "ok", Summary: "naïve – 日本 \"quoted\""})
	}
	text, err := st.Encode()
	require.NoError(t, err)
	assert.Greater(t, len(text), 29<<10)
	back, err := Decode(text)
	require.NoError(t, err)
	st.Version = version
	assert.Equal(t, st, back)
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// The state goes first, people's text after it, as they wrote it; both read back, and a note
// appended after (bd update --append-notes) reads back too.
func TestEncodeKeepsPeoplesNotes(t *testing.T) {
	st := State{RunID: "r-1", FailedRuns: 2, ForeignNotes: "ask Ann\n\nsecond paragraph"}
	text, err := st.Encode()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(text, stateMark), text)
	assert.True(t, strings.HasSuffix(text, "\n\nask Ann\n\nsecond paragraph"), text)
	assert.NotContains(t, text, "foreign_notes", "people's text is beside the state, not inside it")
	back, err := Decode(text + "\nappended by bd note")
	require.NoError(t, err)
	assert.Equal(t, 2, back.FailedRuns)
	assert.Equal(t, "ask Ann\n\nsecond paragraph\nappended by bd note", back.ForeignNotes)
}

type apartTracker struct{ tracker.Tracker }

func (apartTracker) KeepsStateApart() bool { return true }

func (apartTracker) ClaimWithState(context.Context, string, string, json.RawMessage) (tracker.Task, error) {
	return tracker.Task{}, nil
}

// Where the tracker keeps the state apart from the notes (bd: metadata), that copy is the
// state; one an older git-norma left in the notes is read when there is no other, and the
// first write takes it out of the notes, leaving people's text.
func TestReadStateApart(t *testing.T) {
	legacy := `{"norma_state":1,"run_id":"r-old","failed_runs":2,"journal":[]}` + "\n\ncall Ann first"
	for _, tc := range []struct {
		name, notes, state string
		apart              bool
		run, people        string
		InNotes            bool
		wantErr            string
	}{
		// people's notes are not carried along where the state is apart: never written
		{name: "apart", apart: true, notes: "call Ann first", state: `{"run_id":"r-1","norma_state":1,"journal":[]}`, run: "r-1"},
		{name: "apart, nothing yet", apart: true, notes: "call Ann first"},
		{name: "apart, long notes of people's", apart: true, notes: strings.Repeat("x", 3*maxForeignNotes)},
		{name: "apart, long notes and an older git-norma's state", apart: true, notes: `{"norma_state":1,"run_id":"r-old","journal":[]}` + "\n\n" + strings.Repeat("x", 3*maxForeignNotes),
			run: "r-old", people: strings.Repeat("x", 3*maxForeignNotes), InNotes: true},
		{name: "apart, an older git-norma's state in the notes", apart: true, notes: legacy, run: "r-old", people: "call Ann first", InNotes: true},
		{name: "apart wins over the notes' copy", apart: true, notes: legacy, state: `{"norma_state":1,"run_id":"r-1","journal":[]}`, run: "r-1", people: "call Ann first", InNotes: true},
		{name: "in the notes (the embedded backlog)", notes: legacy, run: "r-old", people: "call Ann first"},
		{name: "apart, not a state", apart: true, state: `{"phase":"do"}`, wantErr: "is not a git-norma state"},
		{name: "apart, newer", apart: true, state: `{"norma_state":9}`, wantErr: "version 9"},
		{name: "apart, no object", apart: true, state: `"text"`, wantErr: "is not a git-norma state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr tracker.Tracker = &tracker.JSONL{}
			if tc.apart {
				tr = apartTracker{tr}
			}
			task := tracker.Task{ID: "norma-1", Notes: tc.notes}
			if tc.state != "" {
				task.State = json.RawMessage(tc.state)
			}
			st, err := Read(tr, task)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.run, st.RunID)
			assert.True(t, tc.people == st.ForeignNotes, "people's notes carried: %.40q, want %.40q", st.ForeignNotes, tc.people)
			assert.Equal(t, tc.InNotes, st.InNotes)

			st.FailedRuns = 5
			u, _, err := Write(st, redact.Redactor{}, nil)
			require.NoError(t, err)
			if !tc.apart {
				require.NotNil(t, u.Notes)
				assert.Contains(t, *u.Notes, `"failed_runs":5`)
				assert.Nil(t, u.State)
				return
			}
			assert.Contains(t, string(u.State), `"failed_runs":5`)
			assert.NotContains(t, string(u.State), "Ann", "people's notes are never copied into the state")
			if tc.InNotes {
				require.NotNil(t, u.Notes, "the state an older git-norma left in the notes is taken out")
				assert.True(t, *u.Notes == tc.people, "the notes keep people's text, and only that")
			} else {
				assert.Nil(t, u.Notes, "the notes are people's: never written")
			}
		})
	}
}

// A person's note added to the task while a run works is kept by the run's next write, even
// one that takes people's text past what git-norma carries along: the write keeps it whole
// (the next run says to move it), never the notes as they were when the run started.
func TestStateWriteKeepsALongNoteAddedMeanwhile(t *testing.T) {
	st := Stored{State: State{Version: version, RunID: "r-1"}}
	st.ForeignNotes = "Ann: short note"
	before, err := st.Encode()
	require.NoError(t, err)
	long := "Bob: " + strings.Repeat("a log pasted in while the run worked\n", 600)
	require.Greater(t, len(long), maxForeignNotes)
	current := before + "\n\n" + long

	st.FailedRuns = 2
	u, _, err := Write(st, redact.Redactor{}, nil)
	require.NoError(t, err)
	require.NotNil(t, u.EditNotes)
	got, err := u.EditNotes(current)
	require.NoError(t, err)
	assert.Contains(t, got, `"failed_runs":2`)
	assert.True(t, strings.Contains(got, strings.TrimSpace(long)), "Bob's note is kept: %.200q", got)
	assert.Contains(t, got, "Ann: short note")
}
