package loop

import (
	"context"
	"fmt"
)

// BuiltinPlan turns the task's Ready Contract into a plan without an LLM: every baseline AC is
// verified by the task's Verify commands, a task without ACs gets one AC per Verify command,
// and a task without Verify commands stops with verify_missing — there would be nothing to
// prove the work is done.
type BuiltinPlan struct{}

func (BuiltinPlan) pure() {}

// Run implements Agent.
func (BuiltinPlan) Run(_ context.Context, req Request) (Output, error) {
	in := req.Input
	out := Output{Status: StatusOK, StopReason: StopNone}
	effective := EffectiveCriteria(in.Task)
	if len(effective) == 0 {
		out.Status, out.StopReason = StatusStop, StopVerifyMissing
		msg := fmt.Sprintf("task %s has no Verify commands, so nothing can prove it done; add a `Verify: CMD` line to its description (git norma task edit %s -d \"...\"; a new task: git norma task add --verify CMD)", in.Task.ID, in.Task.ID)
		out.Summary = Summary{Text: "no executable verification: " + msg, Errors: []string{msg}}
		out.Progress = Progress{Title: "Plan stopped: verification missing", Details: []string{msg}}
		fmt.Fprintln(req.Stdout, msg)
		return out, nil
	}
	goal := in.Task.Title
	if rc := ParseReadyContract(in.Task.Description); rc.Objective != "" {
		goal = rc.Objective
	}
	acIDs := make([]string, 0, len(effective))
	for _, ac := range effective {
		acIDs = append(acIDs, ac.ID)
	}
	plan := &Plan{
		TaskID:      in.Task.ID,
		Goal:        goal,
		Constraints: []string{"change only what the task needs", "leave committing to the orchestrator"},
		AcceptanceCriteria: PlanCriteria{
			Baseline:  nonNil(in.Task.AcceptanceCriteria),
			Effective: effective,
		},
		WorkPlan: WorkPlan{
			TimeboxMinutes: in.Budgets.MaxWallTimeMinutes,
			DoSteps: []DoStep{{
				ID: "DO-1", Text: "Implement: " + goal, Commands: []CommandRef{}, TargetsACIDs: acIDs,
			}},
			CheckSteps:   []CheckStep{{ID: "VER-1", Text: "Evaluate effective acceptance criteria", Mode: "acceptance_criteria"}},
			StopTriggers: StopReasonsAllowed,
		},
	}
	if f, ok := in.Context.Facts[FactLastFailure].(Failure); ok {
		plan.Constraints = append(plan.Constraints, "address the previous failure: "+f.Summary)
	}
	out.Plan = plan
	out.Summary.Text = fmt.Sprintf("%d AC, %d check(s), 1 do step", len(effective), countChecks(effective))
	out.Progress = Progress{
		Title: "Plan: " + goal,
		Details: []string{
			"goal: " + goal,
			fmt.Sprintf("AC effective: %d, do_steps: %d, check_steps: %d", len(effective), len(plan.WorkPlan.DoSteps), len(plan.WorkPlan.CheckSteps)),
		},
	}
	fmt.Fprintf(req.Stdout, "built-in plan: %s\n", out.Summary.Text)
	return out, nil
}

// EffectiveCriteria attaches the task's Verify commands to every baseline AC, or makes one AC
// per Verify command when the task lists no acceptance criteria.
func EffectiveCriteria(t TaskInput) []EffectiveCriterion {
	if len(t.VerifyCommands) == 0 {
		return nil
	}
	var eff []EffectiveCriterion
	for _, ac := range t.AcceptanceCriteria {
		eff = append(eff, EffectiveCriterion{
			ID: ac.ID, Origin: "baseline", Text: ac.Text,
			Checks: checksFor(ac.ID, t.VerifyCommands),
			Reason: "verified by the task's Verify commands",
		})
	}
	if len(eff) > 0 {
		return eff
	}
	for i, cmd := range t.VerifyCommands {
		id := fmt.Sprintf("AC-%d", i+1)
		eff = append(eff, EffectiveCriterion{
			ID: id, Origin: "verify", Text: fmt.Sprintf("`%s` succeeds", cmd),
			Checks: checksFor(id, []string{cmd}),
			Reason: "from the task's Verify field",
		})
	}
	return eff
}

func checksFor(acID string, cmds []string) []CheckSpec {
	checks := make([]CheckSpec, 0, len(cmds))
	for i, c := range cmds {
		checks = append(checks, CheckSpec{ID: fmt.Sprintf("CHK-%s-%d", acID, i+1), Cmd: c, ExpectExitCodes: []int{0}})
	}
	return checks
}

func countChecks(eff []EffectiveCriterion) int {
	n := 0
	for _, ac := range eff {
		n += len(ac.Checks)
	}
	return n
}
