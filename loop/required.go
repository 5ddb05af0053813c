package loop

import (
	"fmt"
	"slices"
)

// EventChecksEnforced is the event type of a plan that tried to drop or alter a check the
// orchestrator requires: the finding is recorded and the orchestrator's copy is used.
const EventChecksEnforced = "plan_checks_enforced"

// requiredCheck is one check no Plan may drop or alter: a Verify command of the task or a
// project gate. Its copy runs with the only expected exit code a user's command has, 0.
type requiredCheck struct {
	cmd string
	// criterion is the orchestrator's copy, added when the plan lacks the command.
	criterion EffectiveCriterion
	// what names it in a finding: "the task's Verify command" or "gate lint".
	what string
}

// requiredChecks are the task's own Verify commands and the configured gates, in that order.
func requiredChecks(t TaskInput, gates []Gate) []requiredCheck {
	var req []requiredCheck
	for i, cmd := range t.VerifyCommands {
		id := fmt.Sprintf("VERIFY-%d", i+1)
		req = append(req, requiredCheck{cmd: cmd, what: "the task's Verify command", criterion: EffectiveCriterion{
			ID: id, Origin: "verify", Text: fmt.Sprintf("`%s` succeeds", cmd),
			Checks: []CheckSpec{{ID: "CHK-" + id, Cmd: cmd, ExpectExitCodes: []int{0}}},
			Reason: "the task's Verify command, required by the orchestrator",
		}})
	}
	for _, g := range gates {
		req = append(req, requiredCheck{cmd: g.Cmd, what: "gate " + g.Name, criterion: GateCriterion(g)})
	}
	return req
}

// enforceRequired returns a copy of the plan with every required check among its effective
// criteria, unchanged: a required command whose expected exit codes the plan changed gets [0]
// back, a gate criterion the plan redefined is replaced, and a required command the plan
// dropped (or replaced) is added as the orchestrator's copy. A plan may add criteria and
// checks, never weaken these. The findings say what the plan tried.
func enforceRequired(p *Plan, t TaskInput, gates []Gate) (*Plan, []string) {
	required := requiredChecks(t, gates)
	if p == nil || len(required) == 0 {
		return p, nil
	}
	cp := *p
	var findings []string
	reserved := map[string]EffectiveCriterion{}
	for _, r := range required {
		reserved[r.criterion.ID] = r.criterion
	}
	effective := make([]EffectiveCriterion, 0, len(p.AcceptanceCriteria.Effective)+len(required))
	for _, ac := range p.AcceptanceCriteria.Effective {
		if own, ok := reserved[ac.ID]; ok && !sameCriterion(ac, own) {
			findings = append(findings, fmt.Sprintf("the plan redefined criterion %s; the orchestrator's (`%s`) is used", ac.ID, own.Checks[0].Cmd))
			continue
		}
		ac.Checks = slices.Clone(ac.Checks)
		for i, c := range ac.Checks {
			r := slices.IndexFunc(required, func(r requiredCheck) bool { return r.cmd == c.Cmd })
			if r < 0 {
				continue
			}
			if !onlyZero(c.ExpectExitCodes) {
				findings = append(findings, fmt.Sprintf("the plan accepted exit codes %v for %s `%s`; only 0 passes", c.ExpectExitCodes, required[r].what, c.Cmd))
			}
			ac.Checks[i].ExpectExitCodes = []int{0}
		}
		effective = append(effective, ac)
	}
	for _, r := range required {
		present := hasCriterion(effective, r.criterion.ID)
		if r.criterion.Origin == "gate" && !present {
			effective = append(effective, r.criterion) // gates always have their own criterion
			continue
		}
		if present || hasCommand(effective, r.cmd) {
			continue
		}
		findings = append(findings, fmt.Sprintf("the plan dropped %s `%s`; the orchestrator's copy is checked", r.what, r.cmd))
		effective = append(effective, r.criterion)
	}
	cp.AcceptanceCriteria.Effective = effective
	return &cp, findings
}

// enforcePlan applies enforceRequired to the step's plan and records what the plan tried as
// an event and a warning of the step: a finding, not a step error.
func (e *engine) enforcePlan(s *stepRun, p *Plan) *Plan {
	p, findings := enforceRequired(p, e.o.Task, e.o.Gates)
	for _, f := range findings {
		s.events = append(s.events, Event{Type: EventChecksEnforced, Message: f})
		s.out.Summary.Warnings = append(s.out.Summary.Warnings, f)
	}
	return p
}

// onlyZero says a check passes on exit code 0 alone (no codes listed means 0).
func onlyZero(codes []int) bool {
	return !slices.ContainsFunc(codes, func(c int) bool { return c != 0 })
}

func sameCriterion(a, b EffectiveCriterion) bool {
	return a.ID == b.ID && slices.EqualFunc(a.Checks, b.Checks, func(x, y CheckSpec) bool {
		return x.Cmd == y.Cmd && onlyZero(x.ExpectExitCodes)
	})
}

func hasCriterion(eff []EffectiveCriterion, id string) bool {
	return slices.ContainsFunc(eff, func(ac EffectiveCriterion) bool { return ac.ID == id })
}

func hasCommand(eff []EffectiveCriterion, cmd string) bool {
	return slices.ContainsFunc(eff, func(ac EffectiveCriterion) bool {
		return slices.ContainsFunc(ac.Checks, func(c CheckSpec) bool { return c.Cmd == cmd })
	})
}
