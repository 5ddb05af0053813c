package loop

import (
	"context"
	"fmt"
)

// BuiltinCheck turns the evidence the engine gathered (every effective check command, run in
// the workspace) into acceptance results, a plan match and a verdict by the enforceable rules.
type BuiltinCheck struct{}

// Run implements Agent.
func (BuiltinCheck) Run(_ context.Context, req Request) (Output, error) {
	in := req.Input
	check := evaluate(in.Plan, in.Do, in.Evidence)
	out := Output{Status: StatusOK, StopReason: StopNone, Check: check}
	out.Summary.Text = checkSummary(check)
	out.Progress = Progress{Title: "Check: " + check.Verdict.Status, Details: checkDetails(check)}
	fmt.Fprintf(req.Stderr, "built-in check: %s\n", out.Summary.Text)
	return out, nil
}

// evaluate computes a Check section from evidence alone.
func evaluate(plan *Plan, do *Do, evidence []Evidence) *Check {
	var effective []EffectiveCriterion
	if plan != nil {
		effective = plan.AcceptanceCriteria.Effective
	}
	results := ResultsFromEvidence(effective, evidence)
	match := MatchPlan(plan, do)
	check := &Check{
		PlanMatch:         match,
		AcceptanceResults: results,
		Verdict:           ComputeVerdict(effective, results, match),
		ProcessNotes:      []ProcessNote{},
		Evidence:          evidence,
	}
	for _, id := range MissingChecks(effective) {
		check.ProcessNotes = append(check.ProcessNotes, ProcessNote{
			Kind: "missing_verification", Severity: "error",
			Text:                fmt.Sprintf("%s has no executable check", id),
			SuggestedStopReason: StopVerifyMissing,
		})
	}
	if !match.Matches() {
		check.ProcessNotes = append(check.ProcessNotes, ProcessNote{
			Kind: "plan_mismatch", Severity: "warning",
			Text:                fmt.Sprintf("do steps missing %v, unexpected %v", match.DoSteps.MissingIDs, match.DoSteps.UnexpectedIDs),
			SuggestedStopReason: StopNone,
		})
	}
	return check
}

func checkSummary(c *Check) string {
	passed := 0
	for _, r := range c.AcceptanceResults {
		if r.Result == VerdictPass {
			passed++
		}
	}
	return fmt.Sprintf("%s: %d/%d AC passed, plan %s", c.Verdict.Status, passed, len(c.AcceptanceResults), c.Verdict.Basis.PlanMatch)
}

func checkDetails(c *Check) []string {
	details := []string{
		fmt.Sprintf("plan_match: %s (do steps missing %d, unexpected %d)", c.Verdict.Basis.PlanMatch,
			len(c.PlanMatch.DoSteps.MissingIDs), len(c.PlanMatch.DoSteps.UnexpectedIDs)),
		checkSummary(c),
	}
	for _, r := range c.AcceptanceResults {
		details = append(details, fmt.Sprintf("%s %s: %s", r.ACID, r.Result, r.Notes))
	}
	return details
}
