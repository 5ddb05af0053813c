package loop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A resumed run records the earlier run's completed plan and do as skipped steps, runs only
// check and act in its first iteration, and runs everything again from the second.
func TestRunResumesCompletedSteps(t *testing.T) {
	planned := planWith("false")
	plan := always(planWith("false"))
	do := always(doneAll())
	check := always(checkClaim(VerdictFail))
	act := always(actDecide(DecisionReplan))
	te := newTestEngine(t, plan, do, check, act)
	te.opts.Budgets.MaxIterations = 2
	te.opts.Resume = &Resume{From: "r-old", Plan: planned.Plan, Do: doneAll().Do}
	var live []Live
	te.opts.Live = func(l Live) { live = append(live, l) }

	res := te.run(t, context.Background())

	assert.Equal(t, RunStopped, res.Status)
	assert.Len(t, plan.requests(), 1, "plan ran only in iteration 2")
	assert.Len(t, do.requests(), 1, "do ran only in iteration 2")
	assert.Len(t, check.requests(), 2)
	assert.Equal(t, 2, do.requests()[0].Input.Run.Iteration)
	recs := te.rec.all()
	require.Len(t, recs, 8)
	assert.Equal(t, "skipped", recs[0].Status)
	assert.Equal(t, "skipped", recs[1].Status)
	assert.Equal(t, "ok", recs[2].Status)
	assert.Contains(t, recs[0].Output.Summary.Text, "resumed: plan completed by run r-old")
	require.NotEmpty(t, live)
	assert.Equal(t, Live{Kind: StepEnded, TaskID: te.opts.Task.ID, Index: 1, Role: RolePlan, Status: "skip",
		Summary: live[0].Summary, Duration: live[0].Duration, LogDir: live[0].LogDir}, live[0], "a restored step ends without starting")
	assert.FileExists(t, te.stepDir("001-plan")+"/output.json")
	// the check of iteration 1 saw the restored plan and do
	first := check.requests()[0].Input
	require.NotNil(t, first.Plan)
	require.NotNil(t, first.Do)
	assert.Equal(t, []string{"DO-1"}, first.Do.Execution.ExecutedStepIDs)
}

// Only a prefix resumes: a do without a plan is ignored, and a check never resumes.
func TestResumeNeedsAPrefix(t *testing.T) {
	r := &Resume{From: "r-x", Plan: planWith("true").Plan, Do: doneAll().Do}
	_, ok := r.output(RoleCheck)
	assert.False(t, ok)
	_, ok = (&Resume{From: "r-x", Do: doneAll().Do}).output(RoleDo)
	assert.False(t, ok)
	_, ok = r.output(RolePlan)
	assert.True(t, ok)
	_, ok = (*Resume)(nil).output(RolePlan)
	assert.False(t, ok)
}

// A pause request is honoured between steps: the step in progress finishes, the next does not
// start, and the run stops with StopPaused.
func TestRunStopsWhenPaused(t *testing.T) {
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), always(checkClaim(VerdictPass)), always(actDecide(DecisionClose)))
	calls := 0
	te.opts.Halt = func() (string, string) {
		calls++
		if calls > 2 {
			return StopPaused, "maintenance window"
		}
		return "", ""
	}
	res := te.run(t, context.Background())
	assert.Equal(t, RunStopped, res.Status)
	assert.Equal(t, StopPaused, res.StopReason)
	assert.Contains(t, res.Message, "paused before check: maintenance window")
	assert.Len(t, te.rec.all(), 2)
}

// Seeded facts (the previous run's failure) reach the first Plan.
func TestRunSeedsFacts(t *testing.T) {
	plan := always(planWith("true"))
	te := newTestEngine(t, plan, always(doneAll()), always(checkClaim(VerdictPass)), always(actDecide(DecisionClose)))
	te.opts.Facts = map[string]any{FactLastFailure: Failure{Summary: "from before"}}
	te.run(t, context.Background())
	f, ok := plan.requests()[0].Input.Context.Facts[FactLastFailure].(Failure)
	require.True(t, ok)
	assert.Equal(t, "from before", f.Summary)
}
