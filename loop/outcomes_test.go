package loop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Act continue: the next iteration keeps the plan (a skipped plan step) and Do gets the failure.
func TestActContinueKeepsThePlan(t *testing.T) {
	plan := always(planWith("false"))
	do := always(doneAll())
	te := newTestEngine(t, plan, do, BuiltinCheck{}, always(actDecide(DecisionContinue)))
	te.opts.Budgets.MaxIterations = 2
	res := te.run(t, context.Background())
	assert.Equal(t, RunStopped, res.Status)
	assert.Len(t, plan.requests(), 1)
	recs := te.rec.all()
	require.Len(t, recs, 8)
	assert.Equal(t, RolePlan, recs[4].Role)
	assert.Equal(t, "skipped", recs[4].Status)
	assert.Equal(t, "same plan: act decided continue", recs[4].Output.Summary.Text)
	_, ok := do.requests()[1].Input.Context.Facts[FactLastFailure].(Failure)
	assert.True(t, ok, "the failure goes to Do")
}

// Act replan: Plan runs again.
func TestActReplanRunsPlanAgain(t *testing.T) {
	plan := always(planWith("false"))
	te := newTestEngine(t, plan, always(doneAll()), BuiltinCheck{}, always(actDecide(DecisionReplan)))
	te.opts.Budgets.MaxIterations = 2
	te.run(t, context.Background())
	assert.Len(t, plan.requests(), 2)
}

// Act rollback: the workspace goes back to before this iteration's Do, the saved ref is
// recorded, and the next iteration replans.
func TestActRollback(t *testing.T) {
	plan := always(planWith("false"))
	te := newTestEngine(t, plan, always(doneAll()), BuiltinCheck{}, always(actDecide(DecisionRollback)))
	te.opts.Budgets.MaxIterations = 2
	te.run(t, context.Background())
	assert.Len(t, plan.requests(), 2)
	require.Len(t, te.ws.rollbacks, 2)
	act := te.rec.byDir(t, "004-act")
	assert.Contains(t, eventTypes(act), "rolled_back")
	assert.Contains(t, act.Output.Summary.Warnings[0], "refs/norma/attempts/test/1")
}

// DECOMPOSE and BLOCKED end the run after Plan with the outcome for the orchestrator.
func TestPlanOutcomesEndTheRun(t *testing.T) {
	prio := 1
	decompose := planWith("true")
	decompose.Plan.Outcome, decompose.Plan.NextTaskID = OutcomeDecompose, "a"
	decompose.Plan.Children = []NewIssue{{Key: "a", Title: "A", Priority: &prio}, {Key: "b", Title: "B", Blocks: []string{"a"}}}
	blocked := planWith("true")
	blocked.Plan.Outcome = OutcomeBlocked
	blocked.Plan.Prerequisite = &NewIssue{Key: "p", Title: "Set up the database"}
	for _, tc := range []struct {
		name   string
		out    Output
		reason string
	}{
		{"decompose", decompose, StopDecomposed},
		{"blocked", blocked, StopDependencyBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do := always(doneAll())
			te := newTestEngine(t, always(tc.out), do, BuiltinCheck{}, BuiltinAct{})
			res := te.run(t, context.Background())
			assert.Equal(t, RunStopped, res.Status)
			assert.Equal(t, tc.reason, res.StopReason)
			assert.Empty(t, do.requests())
			require.NotNil(t, res.Plan)
			assert.Equal(t, tc.out.Plan.Outcome, res.Plan.Outcome)
		})
	}
}

// An outcome that reaches outside what Plan creates is refused as a contract violation.
func TestPlanOutcomeValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(p *Plan)
		want string
	}{
		{"decompose without children", func(p *Plan) { p.Outcome = OutcomeDecompose }, "at least one entry"},
		{"next is not a child", func(p *Plan) {
			p.Outcome, p.NextTaskID, p.Children = OutcomeDecompose, "x", []NewIssue{{Key: "a", Title: "A"}}
		}, "next_task_id"},
		{"blocks an existing issue", func(p *Plan) {
			p.Outcome, p.NextTaskID = OutcomeDecompose, "a"
			p.Children = []NewIssue{{Key: "a", Title: "A", Blocks: []string{"norma-other"}}}
		}, "Plan may only link issues it creates"},
		{"blocked without prerequisite", func(p *Plan) { p.Outcome = OutcomeBlocked }, "needs plan.prerequisite"},
		{"unknown outcome", func(p *Plan) { p.Outcome = "MAYBE" }, "READY, DECOMPOSE or BLOCKED"},
		{"bad priority", func(p *Plan) {
			bad := 9
			p.Outcome, p.NextTaskID, p.Children = OutcomeDecompose, "a", []NewIssue{{Key: "a", Title: "A", Priority: &bad}}
		}, "priority 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := planWith("true")
			tc.mut(out.Plan)
			err := ValidateOutput(RolePlan, testTaskID, &out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Gates join every plan's effective criteria, so a task whose own checks pass still fails on a
// failing gate.
func TestGatesFailATask(t *testing.T) {
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), BuiltinCheck{}, BuiltinAct{})
	te.opts.Gates = []Gate{{Name: "lint", Cmd: "exit 3"}}
	te.opts.Budgets.MaxIterations = 1
	res := te.run(t, context.Background())
	assert.Equal(t, VerdictFail, res.Verdict)
	var ids []string
	for _, ac := range res.Plan.AcceptanceCriteria.Effective {
		ids = append(ids, ac.ID)
	}
	assert.Contains(t, ids, "GATE-lint")
	var failing []string
	for _, r := range res.Check.AcceptanceResults {
		if r.Result != VerdictPass {
			failing = append(failing, r.ACID)
		}
	}
	assert.Equal(t, []string{"GATE-lint"}, failing)
}

// The cost the agents report is summed; reaching max_cost_usd stops the run.
func TestCostBudget(t *testing.T) {
	do := script(func(context.Context, int, Request) (Output, error) {
		out := doneAll()
		out.Usage = &Usage{Agent: "claude", Model: "m", CostUSD: 0.6}
		return out, nil
	})
	te := newTestEngine(t, always(planWith("false")), do, BuiltinCheck{}, BuiltinAct{})
	te.opts.Budgets.MaxCostUSD = 1.0
	res := te.run(t, context.Background())
	assert.Equal(t, StopBudgetExceeded, res.StopReason)
	assert.Contains(t, res.Message, "max_cost_usd (1.00) reached")
	assert.Len(t, do.requests(), 2)
}
