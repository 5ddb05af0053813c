package loop

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// FailureEvent is the event of a failed Check, carrying its Failure: what status shows of a
// run that did not pass.
const FailureEvent = "check_failed"

// Failure is the previous iteration's failure, passed to the next one in
// context.facts.last_failure so Plan and Do can address it (adopted from the peer loops).
type Failure struct {
	Iteration int           `json:"iteration"`
	Verdict   string        `json:"verdict"`
	Failing   []FailedCheck `json:"failing"`
	Summary   string        `json:"summary"`
	// Changes says what changed in the failing output since the previous iteration of the
	// same run (see ChangesFrom); empty for a run's first failure.
	Changes string `json:"changes,omitempty"`
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

// volatile matches what changes between two runs of the same failing command without saying
// anything about the work: durations, clock times, dates, commit and object ids, and the
// step's private temporary directory.
var volatile = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b|\d{4}-\d{2}-\d{2}[T ][0-9:.]+Z?|\b\d{2}:\d{2}:\d{2}(\.\d+)?\b|\b[0-9a-f]{7,64}\b|git-norma-step-[^/\s]+`)
})

func normalise(output string) string { return volatile().ReplaceAllString(output, "…") }

// Same says f fails exactly as g did: the same checks, with the same exit codes and the same
// output once durations, times, ids and temporary paths are set aside — an iteration that
// changed nothing the checks can see.
func (f Failure) Same(g Failure) bool {
	return f.Verdict == g.Verdict && len(f.Failing) > 0 && slices.EqualFunc(f.Failing, g.Failing, func(c, o FailedCheck) bool {
		return c.CheckID == o.CheckID && c.Cmd == o.Cmd && c.ExitCode == o.ExitCode && c.TimedOut == o.TimedOut &&
			normalise(c.OutputTail) == normalise(o.OutputTail)
	})
}

// maxChangeLines bounds Changes: enough to see what moved, never the whole log.
const maxChangeLines = 30

// ChangesFrom says how f's failing output differs from the previous iteration's: checks that
// fail now or no longer, and the lines of each one's output that went ("-") or came ("+").
func (f Failure) ChangesFrom(prev Failure) string {
	before := map[string]FailedCheck{}
	for _, c := range prev.Failing {
		before[c.CheckID] = c
	}
	var lines []string
	for _, c := range f.Failing {
		p, ok := before[c.CheckID]
		delete(before, c.CheckID)
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("%s fails now (exit %d): `%s`", c.CheckID, c.ExitCode, c.Cmd))
		case p.ExitCode != c.ExitCode:
			lines = append(lines, fmt.Sprintf("%s: exit %d, was %d", c.CheckID, c.ExitCode, p.ExitCode))
		}
		if ok {
			for _, l := range lineDiff(p.OutputTail, c.OutputTail) {
				lines = append(lines, c.CheckID+": "+l)
			}
		}
	}
	for _, c := range prev.Failing {
		if _, gone := before[c.CheckID]; gone {
			lines = append(lines, fmt.Sprintf("%s passes now: `%s`", c.CheckID, c.Cmd))
		}
	}
	if len(lines) > maxChangeLines {
		lines = append(lines[:maxChangeLines], fmt.Sprintf("… %d more changed lines", len(lines)-maxChangeLines))
	}
	return strings.Join(lines, "\n")
}

// lineDiff lists the lines removed from a ("- ") and added in b ("+ "), in order.
func lineDiff(a, b string) []string {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	var out []string
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines) {
		mark := map[diffmatchpatch.Operation]string{diffmatchpatch.DiffDelete: "- ", diffmatchpatch.DiffInsert: "+ "}[d.Type]
		if mark == "" {
			continue
		}
		for _, l := range strings.SplitAfter(strings.TrimSuffix(d.Text, "\n"), "\n") {
			out = append(out, mark+strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

// Tail is the last n lines of a failing check's output, for a terminal.
func (c FailedCheck) Tail(n int) []string {
	lines := strings.Split(strings.TrimRight(c.OutputTail, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[max(len(lines)-n, 0):]
}
