package loop

import (
	"fmt"
	"strings"
)

// Failure is the previous iteration's failure, passed to the next one in
// context.facts.last_failure so Plan and Do can address it (adopted from the peer loops).
type Failure struct {
	Iteration int           `json:"iteration"`
	Verdict   string        `json:"verdict"`
	Failing   []FailedCheck `json:"failing"`
	Summary   string        `json:"summary"`
}

// FailedCheck is one check that did not pass, with the tail of its output.
type FailedCheck struct {
	ACID       string `json:"ac_id"`
	CheckID    string `json:"check_id"`
	Cmd        string `json:"cmd"`
	ExitCode   int    `json:"exit_code"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	OutputTail string `json:"output_tail"`
}

// NewFailure summarises a non-PASS check for the next iteration (and the next run).
func NewFailure(iteration int, c *Check) Failure {
	f := Failure{Iteration: iteration, Verdict: c.Verdict.Status, Failing: []FailedCheck{}}
	var parts []string
	for _, ev := range c.Evidence {
		if ev.Passed {
			continue
		}
		f.Failing = append(f.Failing, FailedCheck{ACID: ev.ACID, CheckID: ev.CheckID, Cmd: ev.Cmd,
			ExitCode: ev.ExitCode, TimedOut: ev.TimedOut, OutputTail: ev.OutputTail})
		parts = append(parts, fmt.Sprintf("`%s` exited %d", ev.Cmd, ev.ExitCode))
	}
	if len(parts) == 0 {
		parts = append(parts, "plan mismatch: "+failingNotes(c))
	}
	f.Summary = fmt.Sprintf("iteration %d %s: %s", iteration, f.Verdict, strings.Join(parts, "; "))
	return f
}
