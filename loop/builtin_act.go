package loop

import (
	"context"
	"fmt"
	"strings"
)

// BuiltinAct closes on PASS and otherwise continues while the budgets allow, stopping with
// budget_exceeded when they do not.
type BuiltinAct struct{}

func (BuiltinAct) pure() {}

// Run implements Agent.
func (BuiltinAct) Run(_ context.Context, req Request) (Output, error) {
	in := req.Input
	out := Output{Status: StatusOK, StopReason: StopNone}
	verdict := ""
	if in.Check != nil {
		verdict = in.Check.Verdict.Status
	}
	act := &Act{Decision: DecisionContinue, Next: ActNext{Recommended: true}}
	switch {
	case verdict == VerdictPass:
		act.Decision, act.Rationale = DecisionClose, "all acceptance criteria passed and the plan matched"
		act.Next = ActNext{Recommended: false, Notes: "land the task branch"}
	case budgetsExhausted(in):
		out.Status, out.StopReason = StatusStop, StopBudgetExceeded
		act.Rationale = fmt.Sprintf("verdict %s and no budget left (iteration %d, %d failed check(s); limits %d and %d)",
			verdict, in.Run.Iteration, failedChecks(in), in.Budgets.MaxIterations, in.Budgets.MaxFailedChecks)
		act.Next.Notes = "a human should look at the failing criteria"
	default:
		act.Rationale = fmt.Sprintf("verdict %s; another iteration is within budget", verdict)
		act.Next.Notes = failingNotes(in.Check)
	}
	out.Act = act
	out.Summary.Text = fmt.Sprintf("%s: %s", act.Decision, act.Rationale)
	if out.Status == StatusStop {
		out.Summary.Text = "stop: " + act.Rationale
	}
	out.Progress = Progress{Title: "Act: " + act.Decision, Details: []string{"decision: " + act.Decision, "next: " + act.Next.Notes}}
	fmt.Fprintf(req.Stderr, "built-in act: %s\n", out.Summary.Text)
	return out, nil
}

func budgetsExhausted(in Input) bool {
	b := in.Budgets
	return (b.MaxIterations > 0 && in.Run.Iteration >= b.MaxIterations) ||
		(b.MaxFailedChecks > 0 && failedChecks(in) >= b.MaxFailedChecks)
}

func failedChecks(in Input) int {
	n, _ := in.Context.Facts[FactFailedChecks].(int)
	return n
}

// failingNotes lists what the next iteration must fix.
func failingNotes(c *Check) string {
	if c == nil {
		return "no check result"
	}
	var parts []string
	for _, r := range c.AcceptanceResults {
		if r.Result != VerdictPass {
			parts = append(parts, fmt.Sprintf("%s (%s)", r.ACID, r.Notes))
		}
	}
	if len(parts) == 0 {
		return "make the executed steps match the plan"
	}
	return "fix " + strings.Join(parts, "; ")
}
