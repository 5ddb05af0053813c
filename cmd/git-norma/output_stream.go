package main

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/git-norma/git-norma/loop"
)

// streamEvent is one line of --json-stream: what a run reports as it happens, and last the
// report itself (kind "run_ended" or "loop_ended").
type streamEvent struct {
	Kind       string        `json:"kind"`
	TaskID     string        `json:"task_id,omitempty"`
	Index      int           `json:"step_index,omitempty"`
	Role       string        `json:"role,omitempty"`
	Status     string        `json:"status,omitempty"`
	Verdict    string        `json:"verdict,omitempty"`
	Summary    string        `json:"summary,omitempty"`
	DurationMS int64         `json:"duration_ms,omitempty"`
	LogDir     string        `json:"log_dir,omitempty"`
	Failure    *loop.Failure `json:"failure,omitempty"`
	Notices    []loop.Event  `json:"notices,omitempty"`
	Text       string        `json:"text,omitempty"`
	Warning    bool          `json:"warning,omitempty"`
	Report     any           `json:"report,omitempty"`
}

var streamKinds = map[loop.LiveKind]string{loop.StepStarted: "step_started", loop.StepEnded: "step_ended", loop.Notice: "notice"}

// jsonStream writes one JSON object per line, whole lines only (parallel runs share it).
type jsonStream struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newJSONStream(w io.Writer) *jsonStream {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonStream{enc: enc}
}

func (s *jsonStream) write(ev streamEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.enc.Encode(ev)
}

// live streams what a run reports, and passes it on to next (the progress on stderr).
func (s *jsonStream) live(next loop.LiveFunc) loop.LiveFunc {
	return func(l loop.Live) {
		s.write(streamEvent{Kind: streamKinds[l.Kind], TaskID: l.TaskID, Index: l.Index, Role: string(l.Role), Status: l.Status,
			Verdict: l.Verdict, Summary: l.Summary, DurationMS: l.Duration.Milliseconds(), LogDir: l.LogDir, Failure: l.Failure,
			Notices: l.Notices, Text: l.Text, Warning: l.Warning})
		next(l)
	}
}
