package loop

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func effectiveACs(ids ...string) []EffectiveCriterion {
	var eff []EffectiveCriterion
	for _, id := range ids {
		eff = append(eff, EffectiveCriterion{ID: id, Text: id, Checks: []CheckSpec{{ID: "CHK-" + id, Cmd: "true"}}})
	}
	return eff
}

func result(id, res string) AcceptanceResult { return AcceptanceResult{ACID: id, Result: res} }

func TestComputeVerdict(t *testing.T) {
	matched := MatchPlan(planWith("true").Plan, doneAll().Do)
	require.True(t, matched.Matches())
	missingStep := PlanMatch{DoSteps: IDMatch{MissingIDs: []string{"DO-2"}}}
	unexpectedStep := PlanMatch{DoSteps: IDMatch{UnexpectedIDs: []string{"DO-9"}}}
	missingCmd := PlanMatch{Commands: IDMatch{MissingIDs: []string{"CMD-2"}}}
	unexpectedCmd := PlanMatch{Commands: IDMatch{UnexpectedIDs: []string{"CMD-9"}}}

	tests := []struct {
		name       string
		effective  []EffectiveCriterion
		results    []AcceptanceResult
		match      PlanMatch
		want       string
		wantMatch  string
		wantAllPas bool
		wantRecomm string
	}{
		{"all pass and plan matches", effectiveACs("AC-1", "AC-2"), []AcceptanceResult{result("AC-1", "PASS"), result("AC-2", "PASS")}, matched, VerdictPass, "MATCH", true, "standardize"},
		{"one FAIL", effectiveACs("AC-1", "AC-2"), []AcceptanceResult{result("AC-1", "PASS"), result("AC-2", "FAIL")}, matched, VerdictFail, "MATCH", false, "continue"},
		{"FAIL wins over mismatch", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "FAIL")}, missingStep, VerdictFail, "MISMATCH", false, "continue"},
		{"missing do step is PARTIAL", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "PASS")}, missingStep, VerdictPartial, "MISMATCH", true, "replan"},
		{"unexpected do step is PARTIAL", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "PASS")}, unexpectedStep, VerdictPartial, "MISMATCH", true, "replan"},
		{"missing command is PARTIAL", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "PASS")}, missingCmd, VerdictPartial, "MISMATCH", true, "replan"},
		{"unexpected command is PARTIAL", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "PASS")}, unexpectedCmd, VerdictPartial, "MISMATCH", true, "replan"},
		{"effective AC without a result is FAIL", effectiveACs("AC-1", "AC-2"), []AcceptanceResult{result("AC-1", "PASS")}, matched, VerdictFail, "MATCH", false, "continue"},
		{"no results at all is FAIL", effectiveACs("AC-1"), nil, matched, VerdictFail, "MATCH", false, "continue"},
		{"empty effective list is not PASS", nil, nil, matched, VerdictFail, "MATCH", false, "continue"},
		{"empty effective list with results is not PASS", nil, []AcceptanceResult{result("AC-1", "PASS")}, matched, VerdictFail, "MATCH", false, "continue"},
		{"FAIL on a result outside the effective list", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "PASS"), result("AC-X", "FAIL")}, matched, VerdictFail, "MATCH", false, "continue"},
		{"unknown result value is not a pass", effectiveACs("AC-1"), []AcceptanceResult{result("AC-1", "pass")}, matched, VerdictFail, "MATCH", false, "continue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := ComputeVerdict(tc.effective, tc.results, tc.match)
			assert.Equal(t, tc.want, v.Status)
			assert.Equal(t, tc.wantMatch, v.Basis.PlanMatch)
			assert.Equal(t, tc.wantAllPas, v.Basis.AllAcceptancePassed)
			assert.Equal(t, tc.wantRecomm, v.Recommendation)
		})
	}
}

func TestMatchPlan(t *testing.T) {
	plan := &Plan{WorkPlan: WorkPlan{DoSteps: []DoStep{
		{ID: "DO-1", Commands: []CommandRef{{ID: "CMD-1"}, {ID: "CMD-2"}}},
		{ID: "DO-2", Commands: []CommandRef{{ID: "CMD-3"}}},
	}}}
	exec := func(steps, skipped []string, cmds ...string) *Do {
		d := &Do{Execution: Execution{ExecutedStepIDs: steps, SkippedStepIDs: skipped}}
		for _, c := range cmds {
			d.Execution.Commands = append(d.Execution.Commands, CommandRef{ID: c})
		}
		return d
	}
	tests := []struct {
		name                        string
		plan                        *Plan
		do                          *Do
		stepsMissing, stepsUnexp    []string
		cmdsMissing, cmdsUnexpected []string
		matches                     bool
	}{
		{name: "everything executed", plan: plan, do: exec([]string{"DO-1", "DO-2"}, nil, "CMD-1", "CMD-2", "CMD-3"),
			stepsMissing: []string{}, stepsUnexp: []string{}, cmdsMissing: []string{}, cmdsUnexpected: []string{}, matches: true},
		{name: "order does not matter", plan: plan, do: exec([]string{"DO-2", "DO-1"}, nil, "CMD-3", "CMD-2", "CMD-1"),
			stepsMissing: []string{}, stepsUnexp: []string{}, cmdsMissing: []string{}, cmdsUnexpected: []string{}, matches: true},
		{name: "skipped step counts as missing", plan: plan, do: exec([]string{"DO-1"}, []string{"DO-2"}, "CMD-1", "CMD-2"),
			stepsMissing: []string{"DO-2"}, stepsUnexp: []string{}, cmdsMissing: []string{"CMD-3"}, cmdsUnexpected: []string{}},
		{name: "unexpected step and command", plan: plan, do: exec([]string{"DO-1", "DO-2", "DO-3"}, nil, "CMD-1", "CMD-2", "CMD-3", "CMD-X"),
			stepsMissing: []string{}, stepsUnexp: []string{"DO-3"}, cmdsMissing: []string{}, cmdsUnexpected: []string{"CMD-X"}},
		{name: "missing command only", plan: plan, do: exec([]string{"DO-1", "DO-2"}, nil, "CMD-1", "CMD-3"),
			stepsMissing: []string{}, stepsUnexp: []string{}, cmdsMissing: []string{"CMD-2"}, cmdsUnexpected: []string{}},
		{name: "nil do: everything missing", plan: plan, do: nil,
			stepsMissing: []string{"DO-1", "DO-2"}, stepsUnexp: []string{}, cmdsMissing: []string{"CMD-1", "CMD-2", "CMD-3"}, cmdsUnexpected: []string{}},
		{name: "nil plan: everything unexpected", plan: nil, do: exec([]string{"DO-1"}, nil, "CMD-1"),
			stepsMissing: []string{}, stepsUnexp: []string{"DO-1"}, cmdsMissing: []string{}, cmdsUnexpected: []string{"CMD-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := MatchPlan(tc.plan, tc.do)
			assert.Equal(t, tc.stepsMissing, m.DoSteps.MissingIDs, "do_steps.missing_ids")
			assert.Equal(t, tc.stepsUnexp, m.DoSteps.UnexpectedIDs, "do_steps.unexpected_ids")
			assert.Equal(t, tc.cmdsMissing, m.Commands.MissingIDs, "commands.missing_ids")
			assert.Equal(t, tc.cmdsUnexpected, m.Commands.UnexpectedIDs, "commands.unexpected_ids")
			assert.Equal(t, tc.matches, m.Matches())
			// The JSON contract wants arrays, never null.
			assert.NotNil(t, m.DoSteps.PlannedIDs)
			assert.NotNil(t, m.DoSteps.ExecutedIDs)
			assert.NotNil(t, m.Commands.PlannedIDs)
			assert.NotNil(t, m.Commands.ExecutedIDs)
		})
	}
}

func TestResultsFromEvidence(t *testing.T) {
	ev := func(ac, chk string, passed bool) Evidence {
		code := 0
		if !passed {
			code = 1
		}
		return Evidence{ACID: ac, CheckID: chk, Cmd: "cmd-" + chk, ExitCode: code, Passed: passed, LogRef: "log#" + chk}
	}
	twoChecks := []EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "C1", Cmd: "a"}, {ID: "C2", Cmd: "b"}}}}
	tests := []struct {
		name      string
		effective []EffectiveCriterion
		evidence  []Evidence
		want      []string // result per AC
		notes     []string // substring per AC
		logRef    string   // of the first AC, if set
	}{
		{name: "all checks passed", effective: twoChecks, evidence: []Evidence{ev("AC-1", "C1", true), ev("AC-1", "C2", true)},
			want: []string{"PASS"}, notes: []string{"2/2 checks passed"}, logRef: "log#C1"},
		{name: "one check failed", effective: twoChecks, evidence: []Evidence{ev("AC-1", "C1", true), ev("AC-1", "C2", false)},
			want: []string{"FAIL"}, notes: []string{"C2: `cmd-C2` exited 1"}, logRef: "log#C2"},
		{name: "first failure is reported", effective: twoChecks, evidence: []Evidence{ev("AC-1", "C1", false), ev("AC-1", "C2", false)},
			want: []string{"FAIL"}, notes: []string{"C1:"}, logRef: "log#C1"},
		{name: "AC without checks is verify_missing FAIL", effective: []EffectiveCriterion{{ID: "AC-1"}},
			evidence: []Evidence{ev("AC-1", "C1", true)}, want: []string{"FAIL"}, notes: []string{"verify_missing"}},
		{name: "fewer evidence entries than checks", effective: twoChecks, evidence: []Evidence{ev("AC-1", "C1", true)},
			want: []string{"FAIL"}, notes: []string{"only 1 of 2 checks ran"}},
		{name: "no evidence at all", effective: twoChecks, evidence: nil,
			want: []string{"FAIL"}, notes: []string{"only 0 of 2 checks ran"}},
		{name: "evidence of another AC does not count", effective: twoChecks, evidence: []Evidence{ev("AC-2", "C1", true), ev("AC-2", "C2", true)},
			want: []string{"FAIL"}, notes: []string{"only 0 of 2 checks ran"}},
		{name: "timed out check", effective: []EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "C1", Cmd: "sleep 9"}}}},
			evidence: []Evidence{{ACID: "AC-1", CheckID: "C1", Cmd: "sleep 9", ExitCode: -1, TimedOut: true}},
			want:     []string{"FAIL"}, notes: []string{"C1: `sleep 9` timed out"}},
		{name: "expected non-zero exit is honoured via Passed", effective: []EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "C1", Cmd: "grep -q x f", ExpectExitCodes: []int{1}}}}},
			evidence: []Evidence{{ACID: "AC-1", CheckID: "C1", Cmd: "grep -q x f", ExitCode: 1, Passed: true}},
			want:     []string{"PASS"}, notes: []string{"1/1 checks passed"}},
		{name: "exit 0 not expected fails via Passed", effective: []EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "C1", Cmd: "grep -q x f", ExpectExitCodes: []int{1}}}}},
			evidence: []Evidence{{ACID: "AC-1", CheckID: "C1", Cmd: "grep -q x f", ExitCode: 0, Passed: false}},
			want:     []string{"FAIL"}, notes: []string{"exited 0"}},
		{name: "one result per AC in order", effective: []EffectiveCriterion{
			{ID: "AC-1", Checks: []CheckSpec{{ID: "C1"}}}, {ID: "AC-2", Checks: []CheckSpec{{ID: "C2"}}}, {ID: "AC-3"}},
			evidence: []Evidence{ev("AC-2", "C2", false), ev("AC-1", "C1", true)},
			want:     []string{"PASS", "FAIL", "FAIL"}, notes: []string{"1/1", "C2:", "verify_missing"}},
		{name: "no effective criteria", effective: nil, evidence: []Evidence{ev("AC-1", "C1", true)}, want: []string{}, notes: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ResultsFromEvidence(tc.effective, tc.evidence)
			require.NotNil(t, got)
			require.Len(t, got, len(tc.want))
			for i, r := range got {
				assert.Equal(t, tc.effective[i].ID, r.ACID)
				assert.Equal(t, tc.want[i], r.Result, r.ACID)
				assert.Contains(t, r.Notes, tc.notes[i], r.ACID)
			}
			if tc.logRef != "" {
				assert.Equal(t, tc.logRef, got[0].LogRef)
			}
		})
	}
}

func TestMergeResults(t *testing.T) {
	tests := []struct {
		name      string
		evidence  []AcceptanceResult
		claimed   []AcceptanceResult
		want      []string
		wantNotes []string
	}{
		{name: "agent downgrades PASS to FAIL",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "PASS", Notes: "1/1"}},
			claimed:  []AcceptanceResult{{ACID: "AC-1", Result: "FAIL", Notes: "output is wrong"}},
			want:     []string{"FAIL"}, wantNotes: []string{"check agent: output is wrong"}},
		{name: "agent cannot upgrade FAIL to PASS",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "FAIL", Notes: "exited 1"}},
			claimed:  []AcceptanceResult{{ACID: "AC-1", Result: "PASS", Notes: "looks fine to me"}},
			want:     []string{"FAIL"}, wantNotes: []string{"exited 1"}},
		{name: "agent agreeing changes nothing",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "PASS", Notes: "1/1"}, {ACID: "AC-2", Result: "FAIL", Notes: "exited 2"}},
			claimed:  []AcceptanceResult{{ACID: "AC-1", Result: "PASS"}, {ACID: "AC-2", Result: "FAIL"}},
			want:     []string{"PASS", "FAIL"}, wantNotes: []string{"1/1", "exited 2"}},
		{name: "agent omitting a result changes nothing",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "PASS", Notes: "1/1"}},
			claimed:  nil,
			want:     []string{"PASS"}, wantNotes: []string{"1/1"}},
		{name: "agent cannot add criteria",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "PASS", Notes: "1/1"}},
			claimed:  []AcceptanceResult{{ACID: "AC-9", Result: "FAIL"}},
			want:     []string{"PASS"}, wantNotes: []string{"1/1"}},
		{name: "a non-PASS claim such as PARTIAL is a downgrade",
			evidence: []AcceptanceResult{{ACID: "AC-1", Result: "PASS"}},
			claimed:  []AcceptanceResult{{ACID: "AC-1", Result: "PARTIAL", Notes: "half"}},
			want:     []string{"FAIL"}, wantNotes: []string{"check agent: half"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]AcceptanceResult(nil), tc.evidence...)
			got := MergeResults(tc.evidence, tc.claimed)
			require.Len(t, got, len(tc.want))
			for i, r := range got {
				assert.Equal(t, tc.want[i], r.Result, r.ACID)
				assert.Contains(t, r.Notes, tc.wantNotes[i], r.ACID)
			}
			assert.Equal(t, orig, tc.evidence, "MergeResults must not modify its input")
		})
	}
}
