package loop

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func verifyTask(cmds ...string) TaskInput {
	return TaskInput{ID: testTaskID, Title: "t", VerifyCommands: cmds}
}

// checksOf flattens a plan's effective criteria to "cmd [codes]" per check.
func checksOf(p *Plan) map[string][]int {
	out := map[string][]int{}
	for _, ac := range p.AcceptanceCriteria.Effective {
		for _, c := range ac.Checks {
			out[c.Cmd] = c.ExpectExitCodes
		}
	}
	return out
}

// A plan cannot loosen, replace or drop the task's Verify commands or the gates: the
// orchestrator's copy is what runs, and each attempt is a finding.
func TestEnforceRequiredChecks(t *testing.T) {
	task := verifyTask("test -f done.txt")
	gates := []Gate{{Name: "lint", Cmd: "make lint"}}
	tests := []struct {
		name    string
		plan    *Plan
		finding string
	}{
		{"loosened exit codes", &Plan{AcceptanceCriteria: PlanCriteria{Effective: []EffectiveCriterion{
			{ID: "AC-1", Checks: []CheckSpec{{ID: "C", Cmd: "test -f done.txt", ExpectExitCodes: []int{0, 1, 2}}}}}}},
			"accepted exit codes [0 1 2] for the task's Verify command `test -f done.txt`"},
		{"replaced by true", planWith("true").Plan, "dropped the task's Verify command `test -f done.txt`"},
		{"dropped", &Plan{}, "dropped the task's Verify command `test -f done.txt`"},
		{"gate redefined", &Plan{AcceptanceCriteria: PlanCriteria{Effective: []EffectiveCriterion{
			{ID: "AC-1", Checks: []CheckSpec{{ID: "C", Cmd: "test -f done.txt"}}},
			{ID: "GATE-lint", Checks: []CheckSpec{{ID: "C2", Cmd: "true"}}}}}},
			"the plan redefined criterion GATE-lint"},
		{"gate loosened", &Plan{AcceptanceCriteria: PlanCriteria{Effective: []EffectiveCriterion{
			{ID: "AC-1", Checks: []CheckSpec{{ID: "C", Cmd: "test -f done.txt"}, {ID: "C2", Cmd: "make lint", ExpectExitCodes: []int{2}}}}}}},
			"accepted exit codes [2] for gate lint `make lint`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := checksOf(tt.plan)
			got, findings := enforceRequired(tt.plan, task, gates)
			require.Len(t, findings, 1)
			assert.Contains(t, findings[0], tt.finding)
			checks := checksOf(got)
			assert.Equal(t, []int{0}, checks["test -f done.txt"])
			assert.Equal(t, []int{0}, checks["make lint"])
			assert.Contains(t, got.AcceptanceCriteria.Effective, GateCriterion(gates[0]))
			assert.Equal(t, before, checksOf(tt.plan), "the plan given is not modified")
		})
	}
}

// The built-in plan, and a plan that only adds checks, are left as they are.
func TestEnforceRequiredKeepsAdditions(t *testing.T) {
	task := verifyTask("test -f done.txt", "make test")
	out, err := BuiltinPlan{}.Run(context.Background(), Request{Input: Input{Task: task}, Stdout: io.Discard})
	require.NoError(t, err)
	got, findings := enforceRequired(out.Plan, task, nil)
	assert.Empty(t, findings)
	assert.Equal(t, out.Plan.AcceptanceCriteria.Effective, got.AcceptanceCriteria.Effective)

	extra := &Plan{AcceptanceCriteria: PlanCriteria{Effective: append(EffectiveCriteria(task),
		EffectiveCriterion{ID: "AC-X", Checks: []CheckSpec{{ID: "CX", Cmd: "grep -q x f", ExpectExitCodes: []int{1}}}})}}
	got, findings = enforceRequired(extra, task, []Gate{{Name: "g", Cmd: "true"}})
	assert.Empty(t, findings)
	assert.Equal(t, []int{1}, checksOf(got)["grep -q x f"], "a check the plan added keeps its exit codes")
	assert.Len(t, got.AcceptanceCriteria.Effective, 4, "two verify ACs, the added one, the gate")

	got, findings = enforceRequired(extra, TaskInput{}, nil)
	assert.Empty(t, findings)
	assert.Same(t, extra, got, "nothing required: the plan as it is")
}

// A plan agent that replaces the task's Verify by `true` does not get a PASS: the real Verify
// runs and fails, the finding is an event and a warning of the plan step, not a step error.
func TestRunEnforcesVerifyOverPlan(t *testing.T) {
	check := always(checkClaim(VerdictPass))
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), check, always(actDecide(DecisionClose)))
	te.opts.Task.VerifyCommands = []string{"test -f done.txt"}
	te.opts.Budgets.MaxIterations = 1

	res := te.run(t, context.Background())

	assert.NotEqual(t, RunPassed, res.Status)
	assert.Equal(t, VerdictFail, res.Verdict)
	recs := te.rec.all()
	require.NotEmpty(t, recs)
	plan := recs[0]
	assert.Equal(t, "ok", plan.Status)
	assert.Contains(t, plan.Output.Summary.Warnings[0], "dropped the task's Verify command `test -f done.txt`")
	require.NotEmpty(t, plan.Events)
	assert.Equal(t, EventChecksEnforced, plan.Events[0].Type)
	var cmds []string
	for _, e := range check.requests()[0].Input.Evidence {
		cmds = append(cmds, e.Cmd)
	}
	assert.Contains(t, cmds, "test -f done.txt")
}

// A plan restored from the tracker is enforced like a fresh one.
func TestResumedPlanIsEnforced(t *testing.T) {
	check := always(checkClaim(VerdictPass))
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), check, always(actDecide(DecisionClose)))
	te.opts.Task.VerifyCommands = []string{"test -f done.txt"}
	te.opts.Budgets.MaxIterations = 1
	te.opts.Resume = &Resume{From: "r-old", Plan: planWith("true").Plan, Do: doneAll().Do}

	res := te.run(t, context.Background())

	assert.Equal(t, VerdictFail, res.Verdict)
	recs := te.rec.all()
	assert.Equal(t, "skipped", recs[0].Status)
	assert.Equal(t, "skipped", recs[1].Status)
	assert.Equal(t, "ok", recs[2].Status, "the check is never resumed")
	require.NotEmpty(t, recs[0].Events)
	assert.Equal(t, EventChecksEnforced, recs[0].Events[0].Type)
}
