package loop

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func builtinReq(in Input) (Request, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return Request{Input: in, Stdout: &stdout, Stderr: &stderr}, &stdout, &stderr
}

func TestBuiltinPlan(t *testing.T) {
	type checkIDs map[string][]string // AC id -> "CHK-id=cmd"
	tests := []struct {
		name       string
		task       TaskInput
		facts      map[string]any
		wantStop   string
		wantChecks checkIDs
		wantOrigin string
		wantGoal   string
		constraint string // substring one constraint must contain
	}{
		{
			name:     "no Verify commands stops verify_missing",
			task:     TaskInput{ID: "norma-a1", Title: "t", AcceptanceCriteria: []AcceptanceCriterion{{ID: "AC-1", Text: "works"}}},
			wantStop: StopVerifyMissing,
		},
		{
			name:     "no Verify commands and no ACs stops verify_missing",
			task:     TaskInput{ID: "norma-a1", Title: "t"},
			wantStop: StopVerifyMissing,
		},
		{
			name: "every AC gets every Verify command",
			task: TaskInput{ID: "norma-a1", Title: "Title", VerifyCommands: []string{"go test ./...", "go vet ./..."},
				AcceptanceCriteria: []AcceptanceCriterion{{ID: "AC-1", Text: "one"}, {ID: "AC-2", Text: "two"}}},
			wantChecks: checkIDs{
				"AC-1": {"CHK-AC-1-1=go test ./...", "CHK-AC-1-2=go vet ./..."},
				"AC-2": {"CHK-AC-2-1=go test ./...", "CHK-AC-2-2=go vet ./..."},
			},
			wantOrigin: "baseline",
			wantGoal:   "Title",
		},
		{
			name: "one AC per Verify command when the task has no ACs",
			task: TaskInput{ID: "norma-a1", Title: "Title", VerifyCommands: []string{"make test", "make lint"}},
			wantChecks: checkIDs{
				"AC-1": {"CHK-AC-1-1=make test"},
				"AC-2": {"CHK-AC-2-1=make lint"},
			},
			wantOrigin: "verify",
			wantGoal:   "Title",
		},
		{
			name: "objective from the Ready Contract is the goal",
			task: TaskInput{ID: "norma-a1", Title: "Title", Description: "Objective: make the build green\nVerify: make",
				VerifyCommands: []string{"make"}},
			wantChecks: checkIDs{"AC-1": {"CHK-AC-1-1=make"}},
			wantOrigin: "verify",
			wantGoal:   "make the build green",
		},
		{
			name:       "last_failure is fed into the constraints",
			task:       TaskInput{ID: "norma-a1", Title: "Title", VerifyCommands: []string{"make"}},
			facts:      map[string]any{FactLastFailure: Failure{Iteration: 1, Verdict: VerdictFail, Summary: "iteration 1 FAIL: `make` exited 2"}},
			wantChecks: checkIDs{"AC-1": {"CHK-AC-1-1=make"}},
			wantOrigin: "verify",
			wantGoal:   "Title",
			constraint: "address the previous failure: iteration 1 FAIL: `make` exited 2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Task: tc.task, Budgets: Budgets{MaxWallTimeMinutes: 17}, Context: Context{Facts: tc.facts}}
			req, stdout, _ := builtinReq(in)
			out, err := BuiltinPlan{}.Run(context.Background(), req)
			require.NoError(t, err)
			if tc.wantStop != "" {
				assert.Equal(t, StatusStop, out.Status)
				assert.Equal(t, tc.wantStop, out.StopReason)
				assert.Nil(t, out.Plan)
				assert.NotEmpty(t, out.Summary.Errors)
				assert.Contains(t, out.Summary.Text, "Verify")
				assert.Contains(t, stdout.String(), tc.task.ID)
				require.NoError(t, ValidateOutput(RolePlan, tc.task.ID, &out), "a stop output is valid")
				return
			}
			require.Equal(t, StatusOK, out.Status)
			require.NoError(t, ValidateOutput(RolePlan, tc.task.ID, &out))
			p := out.Plan
			require.NotNil(t, p)
			assert.Equal(t, tc.task.ID, p.TaskID)
			assert.Equal(t, tc.wantGoal, p.Goal)
			got := checkIDs{}
			var acIDs []string
			for _, ac := range p.AcceptanceCriteria.Effective {
				acIDs = append(acIDs, ac.ID)
				assert.Equal(t, tc.wantOrigin, ac.Origin, ac.ID)
				for _, c := range ac.Checks {
					got[ac.ID] = append(got[ac.ID], c.ID+"="+c.Cmd)
					assert.Equal(t, []int{0}, c.ExpectExitCodes)
				}
			}
			assert.Equal(t, tc.wantChecks, got)
			assert.Empty(t, MissingChecks(p.AcceptanceCriteria.Effective))
			require.Len(t, p.WorkPlan.DoSteps, 1)
			assert.Equal(t, "DO-1", p.WorkPlan.DoSteps[0].ID)
			assert.Equal(t, acIDs, p.WorkPlan.DoSteps[0].TargetsACIDs)
			assert.NotNil(t, p.WorkPlan.DoSteps[0].Commands, "commands must be [] in JSON")
			assert.Equal(t, 17, p.WorkPlan.TimeboxMinutes)
			assert.NotNil(t, p.AcceptanceCriteria.Baseline)
			assert.Len(t, p.WorkPlan.CheckSteps, 1)
			if tc.constraint != "" {
				assert.Contains(t, p.Constraints, tc.constraint)
			} else {
				for _, c := range p.Constraints {
					assert.NotContains(t, c, "previous failure")
				}
			}
			// Spec 8.5: Plan's journal entry has the goal and the counts.
			assert.Contains(t, out.Progress.Details, "goal: "+tc.wantGoal)
			assert.Contains(t, out.Progress.Details[1], "AC effective: ")
		})
	}
}

func TestBuiltinCheck(t *testing.T) {
	plan := &Plan{
		AcceptanceCriteria: PlanCriteria{Effective: []EffectiveCriterion{
			{ID: "AC-1", Checks: []CheckSpec{{ID: "C1", Cmd: "a"}}},
			{ID: "AC-2", Checks: []CheckSpec{{ID: "C2", Cmd: "b"}}},
		}},
		WorkPlan: WorkPlan{DoSteps: []DoStep{{ID: "DO-1"}}},
	}
	did := &Do{Execution: Execution{ExecutedStepIDs: []string{"DO-1"}}}
	pass := []Evidence{{ACID: "AC-1", CheckID: "C1", Cmd: "a", Passed: true}, {ACID: "AC-2", CheckID: "C2", Cmd: "b", Passed: true}}
	oneFails := []Evidence{{ACID: "AC-1", CheckID: "C1", Cmd: "a", Passed: true}, {ACID: "AC-2", CheckID: "C2", Cmd: "b", ExitCode: 1}}
	noChecks := &Plan{AcceptanceCriteria: PlanCriteria{Effective: []EffectiveCriterion{{ID: "AC-1"}}},
		WorkPlan: WorkPlan{DoSteps: []DoStep{{ID: "DO-1"}}}}
	tests := []struct {
		name       string
		plan       *Plan
		do         *Do
		evidence   []Evidence
		want       string
		wantNotes  []string // process note kinds
		wantPassed int
	}{
		{name: "all evidence passes and plan matches", plan: plan, do: did, evidence: pass, want: VerdictPass, wantNotes: []string{}, wantPassed: 2},
		{name: "failing evidence", plan: plan, do: did, evidence: oneFails, want: VerdictFail, wantNotes: []string{}, wantPassed: 1},
		{name: "skipped step is PARTIAL", plan: plan, do: &Do{Execution: Execution{SkippedStepIDs: []string{"DO-1"}}}, evidence: pass,
			want: VerdictPartial, wantNotes: []string{"plan_mismatch"}, wantPassed: 2},
		{name: "no evidence is FAIL", plan: plan, do: did, evidence: nil, want: VerdictFail, wantNotes: []string{}, wantPassed: 0},
		{name: "AC without checks", plan: noChecks, do: did, evidence: nil, want: VerdictFail, wantNotes: []string{"missing_verification"}, wantPassed: 0},
		{name: "no plan", plan: nil, do: nil, evidence: nil, want: VerdictFail, wantNotes: []string{}, wantPassed: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _, stderr := builtinReq(Input{Plan: tc.plan, Do: tc.do, Evidence: tc.evidence})
			out, err := BuiltinCheck{}.Run(context.Background(), req)
			require.NoError(t, err)
			require.NoError(t, ValidateOutput(RoleCheck, testTaskID, &out))
			assert.Equal(t, StatusOK, out.Status)
			require.NotNil(t, out.Check)
			assert.Equal(t, tc.want, out.Check.Verdict.Status)
			assert.Equal(t, "Check: "+tc.want, out.Progress.Title)
			var kinds []string
			for _, n := range out.Check.ProcessNotes {
				kinds = append(kinds, n.Kind)
			}
			assert.ElementsMatch(t, tc.wantNotes, kinds)
			passed := 0
			for _, r := range out.Check.AcceptanceResults {
				if r.Result == VerdictPass {
					passed++
				}
			}
			assert.Equal(t, tc.wantPassed, passed)
			assert.Equal(t, tc.evidence, out.Check.Evidence)
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestBuiltinAct(t *testing.T) {
	check := func(verdict string) *Check {
		return &Check{Verdict: Verdict{Status: verdict},
			AcceptanceResults: []AcceptanceResult{{ACID: "AC-1", Result: VerdictFail, Notes: "`make` exited 2"}}}
	}
	tests := []struct {
		name         string
		verdict      string
		iteration    int
		failedChecks any
		budgets      Budgets
		wantStatus   string
		wantStop     string
		wantDecision string
		wantNext     string
	}{
		{name: "PASS closes", verdict: VerdictPass, iteration: 1, budgets: Budgets{MaxIterations: 1}, wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionClose},
		{name: "PASS closes even on the last iteration with failed checks used up", verdict: VerdictPass, iteration: 5, failedChecks: 9,
			budgets: Budgets{MaxIterations: 5, MaxFailedChecks: 2}, wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionClose},
		{name: "FAIL within budget continues", verdict: VerdictFail, iteration: 1, failedChecks: 1, budgets: Budgets{MaxIterations: 3, MaxFailedChecks: 2},
			wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionContinue, wantNext: "AC-1"},
		{name: "PARTIAL within budget continues", verdict: VerdictPartial, iteration: 2, budgets: Budgets{MaxIterations: 3},
			wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionContinue},
		{name: "no budgets means continue", verdict: VerdictFail, iteration: 100, failedChecks: 100,
			wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionContinue},
		{name: "iteration == max_iterations stops", verdict: VerdictFail, iteration: 3, budgets: Budgets{MaxIterations: 3},
			wantStatus: StatusStop, wantStop: StopBudgetExceeded, wantDecision: DecisionContinue},
		{name: "iteration beyond max_iterations stops", verdict: VerdictFail, iteration: 4, budgets: Budgets{MaxIterations: 3},
			wantStatus: StatusStop, wantStop: StopBudgetExceeded, wantDecision: DecisionContinue},
		{name: "failed_checks == max_failed_checks stops", verdict: VerdictFail, iteration: 1, failedChecks: 2, budgets: Budgets{MaxIterations: 5, MaxFailedChecks: 2},
			wantStatus: StatusStop, wantStop: StopBudgetExceeded, wantDecision: DecisionContinue},
		{name: "failed_checks above max_failed_checks stops", verdict: VerdictPartial, iteration: 1, failedChecks: 3, budgets: Budgets{MaxFailedChecks: 2},
			wantStatus: StatusStop, wantStop: StopBudgetExceeded, wantDecision: DecisionContinue},
		{name: "failed_checks below max_failed_checks continues", verdict: VerdictFail, iteration: 1, failedChecks: 1, budgets: Budgets{MaxFailedChecks: 2},
			wantStatus: StatusOK, wantStop: StopNone, wantDecision: DecisionContinue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			facts := map[string]any{}
			if tc.failedChecks != nil {
				facts[FactFailedChecks] = tc.failedChecks
			}
			in := Input{Run: RunRef{Iteration: tc.iteration}, Budgets: tc.budgets, Check: check(tc.verdict), Context: Context{Facts: facts}}
			req, _, _ := builtinReq(in)
			out, err := BuiltinAct{}.Run(context.Background(), req)
			require.NoError(t, err)
			require.NoError(t, ValidateOutput(RoleAct, testTaskID, &out))
			assert.Equal(t, tc.wantStatus, out.Status)
			assert.Equal(t, tc.wantStop, out.StopReason)
			require.NotNil(t, out.Act)
			assert.Equal(t, tc.wantDecision, out.Act.Decision)
			assert.NotEmpty(t, out.Act.Rationale)
			assert.Contains(t, out.Act.Next.Notes, tc.wantNext)
			assert.Contains(t, out.Progress.Details, "decision: "+tc.wantDecision)
		})
	}
	t.Run("no check result continues", func(t *testing.T) {
		req, _, _ := builtinReq(Input{Run: RunRef{Iteration: 1}, Budgets: Budgets{MaxIterations: 3}})
		out, err := BuiltinAct{}.Run(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, DecisionContinue, out.Act.Decision)
		assert.Equal(t, "no check result", out.Act.Next.Notes)
	})
}
