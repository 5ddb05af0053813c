package loop

import "time"

// LiveKind says what a Live reports.
type LiveKind int

const (
	// StepStarted: a step's agent (or its check commands) starts.
	StepStarted LiveKind = iota + 1
	// StepEnded: a step is recorded; Status, Verdict, Summary and Notices say how it went.
	StepEnded
	// Notice: something the user should know that is not a step (a resumed task, a
	// recovered claim, the next task of a loop); Warning marks the ones -q still shows.
	Notice
)

// Live is what the engine, and the application around it, tell the user while a run goes on.
// It is data, not text: the command line renders it (a terminal, plain lines, JSON).
type Live struct {
	Kind   LiveKind
	TaskID string
	// Index and Role name the step (StepStarted, StepEnded).
	Index int
	Role  Role
	// Status is the step's output status, or "skip" for a step restored from an earlier run.
	Status string
	// Verdict is a Check step's verdict (PASS, FAIL, PARTIAL), "" for other steps.
	Verdict  string
	Summary  string
	Duration time.Duration
	// LogDir holds the step's stdout.txt and stderr.txt.
	LogDir string
	// Failure is a failed Check's: the failing checks, and what changed since the last try.
	Failure *Failure
	// Notices are the step's events the user should see at once (sandbox_killed,
	// sandbox_denied, sandbox_tampered).
	Notices []Event
	// Text is a Notice's line; Warning marks a warning.
	Text    string
	Warning bool
}

// LiveFunc receives what happens; it must not block for long (the run waits for it).
type LiveFunc func(Live)

// report hands p to f, when there is one.
func (f LiveFunc) report(p Live) {
	if f != nil {
		f(p)
	}
}
