package loop

import (
	"fmt"
	"slices"
)

// MatchPlan compares the plan's do_steps and commands with what Do reports it executed.
// Skipped steps count as missing: the plan was not carried out as written.
func MatchPlan(plan *Plan, do *Do) PlanMatch {
	var plannedSteps, plannedCmds []string
	if plan != nil {
		for _, s := range plan.WorkPlan.DoSteps {
			plannedSteps = append(plannedSteps, s.ID)
			for _, c := range s.Commands {
				plannedCmds = append(plannedCmds, c.ID)
			}
		}
	}
	var executedSteps, executedCmds []string
	if do != nil {
		executedSteps = do.Execution.ExecutedStepIDs
		for _, c := range do.Execution.Commands {
			executedCmds = append(executedCmds, c.ID)
		}
	}
	return PlanMatch{
		DoSteps:  matchIDs(plannedSteps, executedSteps),
		Commands: matchIDs(plannedCmds, executedCmds),
	}
}

func matchIDs(planned, executed []string) IDMatch {
	return IDMatch{
		PlannedIDs:    nonNil(planned),
		ExecutedIDs:   nonNil(executed),
		MissingIDs:    notIn(planned, executed),
		UnexpectedIDs: notIn(executed, planned),
	}
}

// notIn lists the ids that others lacks, in order; never nil.
func notIn(ids, others []string) []string {
	out := []string{}
	for _, id := range ids {
		if !slices.Contains(others, id) {
			out = append(out, id)
		}
	}
	return out
}

// Matches reports whether nothing planned is missing and nothing unplanned was executed.
func (p PlanMatch) Matches() bool {
	return len(p.DoSteps.MissingIDs)+len(p.DoSteps.UnexpectedIDs)+
		len(p.Commands.MissingIDs)+len(p.Commands.UnexpectedIDs) == 0
}

// ComputeVerdict applies the enforceable rules of spec 8.3: any failed AC is FAIL, else a plan
// mismatch is PARTIAL, else PASS. An effective AC without a result counts as failed, so a
// Check that forgets a criterion can never produce a PASS.
func ComputeVerdict(effective []EffectiveCriterion, results []AcceptanceResult, match PlanMatch) Verdict {
	allPassed := len(effective) > 0 && !slices.ContainsFunc(results, func(r AcceptanceResult) bool { return r.Result != VerdictPass })
	for _, ac := range effective {
		if _, ok := findResult(results, ac.ID); !ok {
			allPassed = false
		}
	}
	v := Verdict{Basis: VerdictBasis{PlanMatch: "MATCH", AllAcceptancePassed: allPassed}}
	if !match.Matches() {
		v.Basis.PlanMatch = "MISMATCH"
	}
	switch {
	case !allPassed:
		v.Status, v.Recommendation = VerdictFail, "continue"
	case !match.Matches():
		v.Status, v.Recommendation = VerdictPartial, "replan"
	default:
		v.Status, v.Recommendation = VerdictPass, "standardize"
	}
	return v
}

func findResult(results []AcceptanceResult, id string) (AcceptanceResult, bool) {
	for _, r := range results {
		if r.ACID == id {
			return r, true
		}
	}
	return AcceptanceResult{}, false
}

// ResultsFromEvidence turns executed checks into one result per effective AC: PASS only when
// the AC has checks and every one of them exited with an expected code.
func ResultsFromEvidence(effective []EffectiveCriterion, evidence []Evidence) []AcceptanceResult {
	results := make([]AcceptanceResult, 0, len(effective))
	for _, ac := range effective {
		r := AcceptanceResult{ACID: ac.ID, Result: VerdictPass}
		if len(ac.Checks) == 0 {
			r.Result, r.Notes = VerdictFail, "verify_missing: no executable check for this criterion"
			results = append(results, r)
			continue
		}
		var passed, total int
		for _, e := range evidence {
			if e.ACID != ac.ID {
				continue
			}
			total++
			if total == 1 {
				r.LogRef = e.LogRef
			}
			if e.Passed {
				passed++
			} else if r.Result == VerdictPass {
				r.Result, r.LogRef = VerdictFail, e.LogRef
				r.Notes = fmt.Sprintf("%s: `%s` exited %d", e.CheckID, e.Cmd, e.ExitCode)
				if e.TimedOut {
					r.Notes = fmt.Sprintf("%s: `%s` timed out", e.CheckID, e.Cmd)
				}
			}
		}
		if total < len(ac.Checks) {
			r.Result, r.Notes = VerdictFail, fmt.Sprintf("only %d of %d checks ran", total, len(ac.Checks))
		}
		if r.Result == VerdictPass {
			r.Notes = fmt.Sprintf("%d/%d checks passed", passed, total)
		}
		results = append(results, r)
	}
	return results
}

// MergeResults combines an agent's claimed results with the evidence-based ones: an agent may
// fail a criterion the commands passed (a finding), but never pass one they failed.
func MergeResults(evidence, claimed []AcceptanceResult) []AcceptanceResult {
	merged := slices.Clone(evidence)
	for i, e := range merged {
		if c, ok := findResult(claimed, e.ACID); ok && c.Result != VerdictPass && e.Result == VerdictPass {
			merged[i].Result = VerdictFail
			merged[i].Notes = "check agent: " + c.Notes
		}
	}
	return merged
}

// nonNil is s, or an empty slice for nil: JSON writes [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
