package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var progressHeaderRE = regexp.MustCompile(`(?m)^## (\S+) — (\d{3}) (PLAN|DO|CHECK|ACT) — (\w+)/(\w+)$`)

// progressHeaders returns the "NNN ROLE — status/stop" part of every journal header.
func progressHeaders(t *testing.T, progress string) []string {
	t.Helper()
	var out []string
	for _, m := range progressHeaderRE.FindAllStringSubmatch(progress, -1) {
		_, err := time.Parse(time.RFC3339, m[1])
		require.NoError(t, err, "timestamp %q", m[1])
		require.True(t, strings.HasSuffix(m[1], "Z"), "timestamp %q must be UTC", m[1])
		out = append(out, fmt.Sprintf("%s %s — %s/%s", m[2], m[3], m[4], m[5]))
	}
	return out
}

// doneSteps is a Do output that executed the given steps and no commands.
func doneSteps(ids ...string) Output {
	return Output{Status: StatusOK, Summary: Summary{Text: "did " + strings.Join(ids, ",")},
		Do: &Do{Execution: Execution{ExecutedStepIDs: ids, SkippedStepIDs: []string{}, Commands: []CommandRef{}}}}
}

func recordRoles(recs []StepRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s:%s", r.Index, r.Role, r.Status))
	}
	return out
}

func TestRunPassInOneIteration(t *testing.T) {
	plan := always(planWith("true"))
	var do *scriptedAgent
	do = script(func(_ context.Context, _ int, req Request) (Output, error) {
		fmt.Fprintln(req.Stdout, "do: working")
		fmt.Fprintln(req.Stderr, "do: a warning")
		require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "feature.go"), []byte("package x\n"), 0o600))
		return doneAll(), nil
	})
	check := always(checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass}))
	act := always(actDecide(DecisionClose))
	te := newTestEngine(t, plan, do, check, act)
	var live []Live
	te.opts.Live = func(l Live) { live = append(live, l) }

	res := te.run(t, context.Background())

	assert.Equal(t, RunPassed, res.Status)
	assert.Equal(t, StopNone, res.StopReason)
	assert.Equal(t, VerdictPass, res.Verdict)
	assert.Equal(t, 1, res.Iterations)
	assert.Equal(t, 4, res.LastStep)
	assert.NoError(t, res.Err)
	assert.Contains(t, res.Message, "PASS")
	require.NotNil(t, res.Plan)
	require.NotNil(t, res.Check)
	assert.Equal(t, VerdictPass, res.Check.Verdict.Status)

	// Step directories with their contract files and logs.
	names := []string{"001-plan", "002-do", "003-check", "004-act"}
	for i, name := range names {
		for _, f := range []string{"input.json", "output.json", "logs/stdout.txt", "logs/stderr.txt"} {
			assert.FileExists(t, filepath.Join(te.stepDir(name), f))
		}
		var in Input
		te.readStepJSON(t, name, "input.json", &in)
		assert.Equal(t, i+1, in.Step.Index, name)
		assert.Equal(t, Roles[i], in.Step.Name, name)
		assert.Equal(t, te.stepDir(name), in.Step.Dir, name)
		assert.Equal(t, RunRef{ID: "r-test", Iteration: 1}, in.Run, name)
		assert.Equal(t, testTaskID, in.Task.ID, name)
		assert.Equal(t, te.ws.dir, in.Paths.WorkspaceDir, name)
		assert.Equal(t, StopReasonsAllowed, in.StopReasonsAllowed, name)
		wantMode := map[Role]string{RolePlan: "read_only", RoleDo: "read_write", RoleCheck: "read_only", RoleAct: "read_write"}[Roles[i]]
		assert.Equal(t, wantMode, in.Paths.WorkspaceMode, name)
		assert.Equal(t, Roles[i] != RolePlan, in.Plan != nil, "%s: plan section", name)
		assert.Equal(t, Roles[i] == RoleCheck || Roles[i] == RoleAct, in.Do != nil, "%s: do section", name)
		assert.Equal(t, Roles[i] == RoleAct, in.Check != nil, "%s: check section", name)
		assert.Equal(t, Roles[i] == RoleCheck, len(in.Evidence) > 0, "%s: evidence", name)

		var out Output
		te.readStepJSON(t, name, "output.json", &out)
		assert.Equal(t, StatusOK, out.Status, name)
		assert.Equal(t, StopNone, out.StopReason, name)
		assert.Equal(t, "steps/"+name+"/logs/stdout.txt", out.Logs.StdoutPath, name)
		assert.Equal(t, "steps/"+name+"/logs/stderr.txt", out.Logs.StderrPath, name)
		assert.Equal(t, out.Logs.StdoutPath, out.Progress.Links["stdout"], name)
	}
	assert.NoDirExists(t, te.stepDir("005-plan"))
	logs, err := os.ReadFile(filepath.Join(te.stepDir("002-do"), "logs", "stdout.txt"))
	require.NoError(t, err)
	assert.Equal(t, "do: working\n", string(logs))
	logs, err = os.ReadFile(filepath.Join(te.stepDir("002-do"), "logs", "stderr.txt"))
	require.NoError(t, err)
	assert.Equal(t, "do: a warning\n", string(logs))
	checkLog, err := os.ReadFile(filepath.Join(te.stepDir("003-check"), "logs", "stdout.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(checkLog), "==> CHK-AC-1: true", "check commands log into the check step")

	// The check step got the orchestrator's evidence.
	creq := check.requests()
	require.Len(t, creq, 1)
	require.Len(t, creq[0].Input.Evidence, 1)
	assert.True(t, creq[0].Input.Evidence[0].Passed)
	assert.Equal(t, filepath.Join(te.stepDir("003-check"), "logs", "stdout.txt"), creq[0].StdoutPath)

	// The recorder got the four steps in order.
	recs := te.rec.all()
	assert.Equal(t, []string{"1:plan:ok", "2:do:ok", "3:check:ok", "4:act:ok"}, recordRoles(recs))
	for _, r := range recs {
		assert.Equal(t, "r-test", r.RunID)
		assert.Equal(t, 1, r.Iteration)
		assert.False(t, r.EndedAt.Before(r.StartedAt))
	}
	assert.Equal(t, names, te.rec.dirs())
	assert.NotEmpty(t, recs[1].Commit, "do's changes are committed by the orchestrator")
	assert.Contains(t, eventTypes(recs[1]), "workspace_committed")
	assert.Equal(t, recs[1].Commit, recs[3].Commit, "act changed nothing: still on do's commit")
	assert.Equal(t, "head-0", recs[0].Head, "a read-only step is noted on the commit it looked at")
	assert.Equal(t, recs[1].Commit, recs[1].Head, "a writing step is noted on its own commit")
	assert.Contains(t, eventTypes(recs[2]), "verdict")
	assert.NotContains(t, eventTypes(recs[2]), "verdict_overridden")
	assert.Equal(t, recs[2].Head, res.VerifiedHead, "the PASS holds for the commit check ran on")
	require.Len(t, te.ws.commits, 2)
	assert.Equal(t, CommitRequest{Role: RoleDo, StepIndex: 2, Iteration: 1, Summary: "did it"}, te.ws.commits[0])
	assert.Equal(t, RoleAct, te.ws.commits[1].Role)

	// progress.md follows the spec 8.5 template, one entry per step.
	progress := te.progress(t)
	assert.Equal(t, []string{"001 PLAN — ok/none", "002 DO — ok/none", "003 CHECK — ok/none", "004 ACT — ok/none"}, progressHeaders(t, progress))
	assert.True(t, strings.HasPrefix(progress, "## 2026-03-04T05:06:07Z — 001 PLAN — ok/none\n"), progress)
	assert.Equal(t, 4, strings.Count(progress, "**Task:** norma-t1  \n**Run:** r-test · **Iteration:** 1\n"))
	assert.Contains(t, progress, "**Title:** plan\n\n**Details:**\n- goal: g\n")
	assert.Contains(t, progress, "**Logs:**\n- stdout: steps/001-plan/logs/stdout.txt\n- stderr: steps/001-plan/logs/stderr.txt\n")
	assert.Contains(t, progress, "**Logs:**\n- stdout: steps/004-act/logs/stdout.txt\n- stderr: steps/004-act/logs/stderr.txt\n")

	// norma.md has the plan's criteria and the outcome.
	summary, err := os.ReadFile(filepath.Join(te.opts.RunDir, "norma.md"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "# Run r-test")
	assert.Contains(t, string(summary), "## Goal\n\nmake it work\n")
	assert.Contains(t, string(summary), "- **AC-1** (baseline) criterion AC-1\n  - `true`\n")
	assert.Contains(t, string(summary), "## Outcome\n\n- status: passed\n- verdict: PASS\n- stop reason: none\n- iterations: 1, steps: 4\n")

	// Each step starts and ends live, in order; a Check's verdict is a field, not text.
	require.Len(t, live, 8)
	for i, l := range live {
		want := StepStarted
		if i%2 == 1 {
			want = StepEnded
		}
		assert.Equal(t, want, l.Kind, "live %d", i)
		assert.Equal(t, i/2+1, l.Index)
		assert.Equal(t, te.opts.Task.ID, l.TaskID)
	}
	assert.Equal(t, RolePlan, live[1].Role)
	assert.Equal(t, StatusOK, live[1].Status)
	assert.Equal(t, RoleCheck, live[5].Role)
	assert.Equal(t, VerdictPass, live[5].Verdict)
	assert.FileExists(t, filepath.Join(live[5].LogDir, "stdout.txt"))
}

func TestRunFailsUntilBudget(t *testing.T) {
	tests := []struct {
		name      string
		budgets   Budgets
		act       Agent
		wantSteps int
		wantIters int
		wantMsg   string
	}{
		{name: "max_iterations with a continuing act", budgets: Budgets{MaxIterations: 2},
			act: always(actDecide(DecisionContinue)), wantSteps: 8, wantIters: 2, wantMsg: "max_iterations (2)"},
		{name: "max_iterations with the built-in act", budgets: Budgets{MaxIterations: 3},
			act: BuiltinAct{}, wantSteps: 12, wantIters: 3, wantMsg: "max_iterations (3)"},
		{name: "max_failed_checks", budgets: Budgets{MaxIterations: 5, MaxFailedChecks: 2},
			act: always(actDecide(DecisionContinue)), wantSteps: 8, wantIters: 2, wantMsg: "max_failed_checks (2)"},
		{name: "max_failed_checks with the built-in act", budgets: Budgets{MaxIterations: 5, MaxFailedChecks: 1},
			act: BuiltinAct{}, wantSteps: 4, wantIters: 1, wantMsg: "max_failed_checks (1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t, always(planWith("exit 1")), always(doneAll()), BuiltinCheck{}, tc.act)
			te.opts.Budgets = tc.budgets
			res := te.run(t, context.Background())

			assert.Equal(t, RunStopped, res.Status)
			assert.Equal(t, StopBudgetExceeded, res.StopReason)
			assert.Equal(t, VerdictFail, res.Verdict)
			assert.Equal(t, tc.wantIters, res.Iterations)
			assert.Equal(t, tc.wantSteps, res.LastStep)
			assert.Contains(t, res.Message, tc.wantMsg)

			recs := te.rec.all()
			require.Len(t, recs, tc.wantSteps)
			for i, r := range recs {
				assert.Equal(t, i+1, r.Index)
				assert.Equal(t, Roles[i%4], r.Role)
				assert.Equal(t, i/4+1, r.Iteration)
				assert.Equal(t, StepDirName(i+1, Roles[i%4]), filepath.Base(r.Dir))
				assert.DirExists(t, r.Dir)
			}
			assert.Len(t, progressHeaders(t, te.progress(t)), tc.wantSteps)
			if tc.wantIters > 1 {
				// Step indexes continue across iterations.
				var in Input
				te.readStepJSON(t, "005-plan", "input.json", &in)
				assert.Equal(t, 5, in.Step.Index)
				assert.Equal(t, RunRef{ID: "r-test", Iteration: 2}, in.Run)
				assert.Equal(t, 1, in.Context.Attempt)
				assert.EqualValues(t, 1, in.Context.Facts[FactFailedChecks])
				assert.Contains(t, te.rec.dirs(), "008-act")
			}
			assert.NoDirExists(t, te.stepDir(StepDirName(tc.wantSteps+1, RolePlan)))
		})
	}
}

func TestRunCheckVerdictComesFromEvidence(t *testing.T) {
	tests := []struct {
		name         string
		checkCmd     string
		claim        Output
		wantVerdict  string
		wantOverride bool
		wantStatus   string
	}{
		{name: "agent claiming PASS while a check fails is overridden", checkCmd: "exit 3",
			claim:       checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass, Notes: "trust me"}),
			wantVerdict: VerdictFail, wantOverride: true, wantStatus: RunStopped},
		{name: "agent claiming PASS without results is overridden", checkCmd: "exit 3",
			claim:       checkClaim(VerdictPass),
			wantVerdict: VerdictFail, wantOverride: true, wantStatus: RunStopped},
		{name: "agent failing a criterion the commands passed makes it FAIL", checkCmd: "true",
			claim:       checkClaim(VerdictFail, AcceptanceResult{ACID: "AC-1", Result: VerdictFail, Notes: "the output is wrong"}),
			wantVerdict: VerdictFail, wantOverride: false, wantStatus: RunStopped},
		{name: "agent agreeing with passing evidence", checkCmd: "true",
			claim:       checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass}),
			wantVerdict: VerdictPass, wantOverride: false, wantStatus: RunPassed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			act := always(actDecide(DecisionClose))
			te := newTestEngine(t, always(planWith(tc.checkCmd)), always(doneAll()), always(tc.claim), act)
			te.opts.Budgets = Budgets{MaxIterations: 1}
			res := te.run(t, context.Background())

			assert.Equal(t, tc.wantStatus, res.Status)
			assert.Equal(t, tc.wantVerdict, res.Verdict)
			rec := te.rec.byDir(t, "003-check")
			assert.Equal(t, tc.wantOverride, assertHasEvent(rec, "verdict_overridden"), "events %v", eventTypes(rec))
			assert.Contains(t, eventTypes(rec), "verdict")
			require.NotNil(t, rec.Output.Check)
			assert.Equal(t, tc.wantVerdict, rec.Output.Check.Verdict.Status)
			assert.NotEmpty(t, rec.Output.Check.Evidence, "the recorded check carries the evidence")

			var out Output
			te.readStepJSON(t, "003-check", "output.json", &out)
			assert.Equal(t, tc.wantVerdict, out.Check.Verdict.Status, "output.json holds the enforced verdict")
			if tc.wantOverride {
				assert.Contains(t, strings.Join(out.Summary.Warnings, "\n"), "the evidence says "+tc.wantVerdict)
			}
			// Act sees the enforced verdict, not the claim.
			areq := act.requests()
			require.Len(t, areq, 1)
			assert.Equal(t, tc.wantVerdict, areq[0].Input.Check.Verdict.Status)
		})
	}
}

func assertHasEvent(rec StepRecord, typ string) bool {
	for _, ev := range rec.Events {
		if ev.Type == typ {
			return true
		}
	}
	return false
}

func TestRunActCloseOnFailIsRefused(t *testing.T) {
	tests := []struct {
		name    string
		verdict string // what the checks produce
		plan    Output
		do      Output
	}{
		{name: "close on FAIL", plan: planWith("false"), do: doneAll()},
		{name: "close on PARTIAL", plan: planWith("true"), do: doneSteps("DO-1", "DO-EXTRA")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t, always(tc.plan), always(tc.do), BuiltinCheck{}, always(actDecide(DecisionClose)))
			te.opts.Budgets = Budgets{MaxIterations: 2}
			res := te.run(t, context.Background())

			assert.NotEqual(t, RunPassed, res.Status)
			assert.Equal(t, RunStopped, res.Status)
			assert.Equal(t, StopBudgetExceeded, res.StopReason)
			assert.NotEqual(t, VerdictPass, res.Verdict)
			assert.Equal(t, 2, res.Iterations, "the refused close continues the loop")
			for _, name := range []string{"004-act", "008-act"} {
				rec := te.rec.byDir(t, name)
				assert.Contains(t, eventTypes(rec), "close_refused", name)
				assert.Contains(t, rec.Output.Summary.Warnings, "close refused: the verdict is not PASS", name)
			}
		})
	}
}

// A PASS holds for what Check ran on: an Act that changes the workspace and closes gets the
// loop to check again, and the run passes only once a Check verified the final head.
func TestRunActChangesAfterPassAreCheckedAgain(t *testing.T) {
	act := script(func(_ context.Context, call int, req Request) (Output, error) {
		if call == 1 {
			require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "tweak.txt"), []byte("after the check\n"), 0o600))
		}
		return actDecide(DecisionClose), nil
	})
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), BuiltinCheck{}, act)
	res := te.run(t, context.Background())

	assert.Equal(t, RunPassed, res.Status, res.Message)
	assert.Equal(t, 2, res.Iterations, "the first close was refused")
	first := te.rec.byDir(t, "004-act")
	assert.Contains(t, eventTypes(first), "close_refused")
	assert.Contains(t, first.Output.Summary.Warnings, "close refused: act changed what check verified")
	assert.Equal(t, first.Head, te.rec.byDir(t, "007-check").Head, "the second check verified act's commit")
	assert.Equal(t, first.Head, res.VerifiedHead, "the PASS holds for act's commit")
	assert.NotContains(t, eventTypes(te.rec.byDir(t, "008-act")), "close_refused")

	// With no iteration left for that check, the run does not pass.
	act = script(func(_ context.Context, _ int, req Request) (Output, error) {
		require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "tweak.txt"), []byte(req.Input.Run.ID+time.Now().String()), 0o600))
		return actDecide(DecisionClose), nil
	})
	te = newTestEngine(t, always(planWith("true")), always(doneAll()), BuiltinCheck{}, act)
	te.opts.Budgets = Budgets{MaxIterations: 1}
	res = te.run(t, context.Background())
	assert.Equal(t, RunStopped, res.Status)
	assert.Equal(t, StopBudgetExceeded, res.StopReason)
}

func TestRunStepFailuresEndTheRun(t *testing.T) {
	okPlan := always(planWith("true"))
	okDo := always(doneAll())
	okCheck := always(checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass}))
	okAct := always(actDecide(DecisionClose))
	fail := func(err error) Agent {
		return script(func(context.Context, int, Request) (Output, error) { return Output{}, err })
	}
	tests := []struct {
		name        string
		plan, do    Agent
		check, act  Agent
		commitErr   error
		wantStatus  string
		wantStop    string
		wantStep    int
		wantKind    string // ProtocolError kind of res.Err, if any
		wantMessage string
	}{
		{name: "do agent protocol error", plan: okPlan, do: fail(&ProtocolError{Kind: ErrKindExit, Msg: "agent exited with status 2"}), check: okCheck, act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 2, wantKind: ErrKindExit, wantMessage: "do step 002: exit_status"},
		{name: "do agent timeout", plan: okPlan, do: fail(&ProtocolError{Kind: ErrKindTimeout, Msg: "too slow"}), check: okCheck, act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 2, wantKind: ErrKindTimeout},
		{name: "do output with status error", plan: okPlan, do: always(Output{Status: StatusError, Summary: Summary{Text: "compiler crashed"}}), check: okCheck, act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 2, wantMessage: "reported an error: compiler crashed"},
		{name: "do output without do section", plan: okPlan, do: always(Output{Status: StatusOK}), check: okCheck, act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 2, wantKind: ErrKindContract},
		{name: "plan for another task", plan: always(func() Output { o := planWith("true"); o.Plan.TaskID = "norma-zzz"; return o }()), do: okDo, check: okCheck, act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 1, wantKind: ErrKindContract},
		{name: "check with an invalid verdict", plan: okPlan, do: okDo, check: always(checkClaim("MAYBE")), act: okAct,
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 3, wantKind: ErrKindContract},
		{name: "act with an invalid decision", plan: okPlan, do: okDo, check: okCheck, act: always(actDecide("ship")),
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 4, wantKind: ErrKindContract},
		{name: "do rewrote history (commit protocol error)", plan: okPlan, do: okDo, check: okCheck, act: okAct,
			commitErr:  &ProtocolError{Kind: ErrKindWorkspace, Msg: "HEAD moved off the task branch"},
			wantStatus: RunFailed, wantStop: StopNone, wantStep: 2, wantKind: ErrKindWorkspace},
		{name: "do stops dependency_blocked", plan: okPlan, do: always(Output{Status: StatusStop, StopReason: StopDependencyBlocked, Summary: Summary{Text: "needs norma-dep"}}), check: okCheck, act: okAct,
			wantStatus: RunStopped, wantStop: StopDependencyBlocked, wantStep: 2, wantMessage: "do stopped: needs norma-dep"},
		{name: "plan stops replan_required", plan: always(Output{Status: StatusStop, StopReason: StopReplanRequired}), do: okDo, check: okCheck, act: okAct,
			wantStatus: RunStopped, wantStop: StopReplanRequired, wantStep: 1},
		// An act stop carries no act section; before the fix in afterAct this dereferenced nil.
		{name: "act stops without an act section", plan: okPlan, do: okDo, check: okCheck,
			act:        always(Output{Status: StatusStop, StopReason: StopDependencyBlocked, Summary: Summary{Text: "waiting on norma-dep"}}),
			wantStatus: RunStopped, wantStop: StopDependencyBlocked, wantStep: 4, wantMessage: "act stopped: waiting on norma-dep"},
		{name: "act stop with close on PASS does not pass", plan: okPlan, do: okDo, check: okCheck,
			act: always(func() Output {
				o := actDecide(DecisionClose)
				o.Status, o.StopReason = StatusStop, StopReplanRequired
				return o
			}()),
			wantStatus: RunStopped, wantStop: StopReplanRequired, wantStep: 4, wantMessage: "act stopped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t, tc.plan, tc.do, tc.check, tc.act)
			te.ws.commitErr = tc.commitErr
			res := te.run(t, context.Background())

			assert.Equal(t, tc.wantStatus, res.Status)
			assert.Equal(t, tc.wantStop, res.StopReason)
			assert.Equal(t, tc.wantStep, res.LastStep)
			assert.Equal(t, 1, res.Iterations)
			assert.Contains(t, res.Message, tc.wantMessage)
			if tc.wantKind != "" {
				var pe *ProtocolError
				require.True(t, errors.As(res.Err, &pe), "res.Err = %v", res.Err)
				assert.Equal(t, tc.wantKind, pe.Kind)
			}
			if tc.wantStatus == RunFailed {
				require.Error(t, res.Err)
			}

			// The failing step is recorded like any other, then nothing runs.
			recs := te.rec.all()
			require.Len(t, recs, tc.wantStep)
			last := recs[len(recs)-1]
			name := StepDirName(tc.wantStep, Roles[tc.wantStep-1])
			assert.Equal(t, name, filepath.Base(last.Dir))
			var out Output
			te.readStepJSON(t, name, "output.json", &out)
			headers := progressHeaders(t, te.progress(t))
			require.Len(t, headers, tc.wantStep)
			if tc.wantStatus == RunFailed {
				assert.Equal(t, "fail", last.Status)
				assert.Equal(t, StatusError, out.Status)
				if tc.wantKind != "" {
					assert.Contains(t, strings.Join(out.Summary.Errors, "\n"), tc.wantKind, "the orchestrator writes the agent's failure")
				}
				assert.Equal(t, fmt.Sprintf("%03d %s — error/none", tc.wantStep, strings.ToUpper(string(Roles[tc.wantStep-1]))), headers[tc.wantStep-1])
			} else {
				assert.Equal(t, "ok", last.Status)
				assert.Equal(t, StatusStop, out.Status)
				assert.Equal(t, tc.wantStop, out.StopReason)
			}
			assert.NoDirExists(t, te.stepDir(StepDirName(tc.wantStep+1, Roles[tc.wantStep%4])))
			summary, err := os.ReadFile(filepath.Join(te.opts.RunDir, "norma.md"))
			require.NoError(t, err)
			assert.Contains(t, string(summary), "- status: "+tc.wantStatus+"\n")
		})
	}
}

func TestRunVerifyMissing(t *testing.T) {
	noChecks := planWith("true")
	noChecks.Plan.AcceptanceCriteria.Effective = append(noChecks.Plan.AcceptanceCriteria.Effective,
		EffectiveCriterion{ID: "AC-2", Origin: "plan", Text: "looks nice"})
	tests := []struct {
		name    string
		plan    Agent
		task    TaskInput
		wantErr string
	}{
		{name: "plan with an AC lacking checks", plan: always(noChecks), task: TaskInput{ID: testTaskID},
			wantErr: "criteria [AC-2] have no executable check"},
		{name: "built-in plan for a task without Verify commands", plan: BuiltinPlan{},
			task:    TaskInput{ID: testTaskID, Title: "t", AcceptanceCriteria: []AcceptanceCriterion{{ID: "AC-1", Text: "works"}}},
			wantErr: "has no Verify commands"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			do := always(doneAll())
			te := newTestEngine(t, tc.plan, do, BuiltinCheck{}, BuiltinAct{})
			te.opts.Task = tc.task
			res := te.run(t, context.Background())

			assert.Equal(t, RunStopped, res.Status)
			assert.Equal(t, StopVerifyMissing, res.StopReason)
			assert.Equal(t, 1, res.LastStep)
			assert.Contains(t, res.Message, tc.wantErr)
			assert.Nil(t, res.Plan, "an unverifiable plan is not adopted")
			assert.Empty(t, do.requests(), "do never runs")
			var out Output
			te.readStepJSON(t, "001-plan", "output.json", &out)
			assert.Equal(t, StatusStop, out.Status)
			assert.Equal(t, StopVerifyMissing, out.StopReason)
			assert.Equal(t, []string{"001 PLAN — stop/verify_missing"}, progressHeaders(t, te.progress(t)))
		})
	}
}

func TestRunReadOnlyAgentMustNotWrite(t *testing.T) {
	writePlan := script(func(_ context.Context, _ int, req Request) (Output, error) {
		require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "notes.txt"), []byte("plan was here"), 0o600))
		return planWith("true"), nil
	})
	tests := []struct {
		name     string
		plan     func(ws *fakeWorkspace) Agent
		check    func(ws *fakeWorkspace) Agent
		wantStep int
		wantRole Role
	}{
		{name: "plan agent writes a file",
			plan:     func(*fakeWorkspace) Agent { return writePlan },
			check:    func(*fakeWorkspace) Agent { return BuiltinCheck{} },
			wantStep: 1, wantRole: RolePlan},
		{name: "plan agent changes git state",
			plan: func(ws *fakeWorkspace) Agent {
				return script(func(context.Context, int, Request) (Output, error) {
					ws.touch("HEAD moved")
					return planWith("true"), nil
				})
			},
			check:    func(*fakeWorkspace) Agent { return BuiltinCheck{} },
			wantStep: 1, wantRole: RolePlan},
		{name: "check agent writes",
			plan: func(*fakeWorkspace) Agent { return always(planWith("true")) },
			check: func(ws *fakeWorkspace) Agent {
				return script(func(context.Context, int, Request) (Output, error) {
					ws.touch("src/main.go")
					return checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass}), nil
				})
			},
			wantStep: 3, wantRole: RoleCheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t, nil, always(doneAll()), nil, always(actDecide(DecisionClose)))
			te.opts.Agents[RolePlan] = RoleAgent{Agent: tc.plan(te.ws)}
			te.opts.Agents[RoleCheck] = RoleAgent{Agent: tc.check(te.ws)}
			discardsBefore := te.ws.discardCount()
			res := te.run(t, context.Background())

			assert.Equal(t, RunFailed, res.Status)
			assert.Equal(t, tc.wantStep, res.LastStep)
			var pe *ProtocolError
			require.True(t, errors.As(res.Err, &pe), "res.Err = %v", res.Err)
			assert.Equal(t, ErrKindWorkspace, pe.Kind)
			assert.Contains(t, pe.Msg, "the "+string(tc.wantRole)+" agent is read-only")
			assert.Equal(t, discardsBefore+1, te.ws.discardCount(), "the workspace is restored")
			assert.NoFileExists(t, filepath.Join(te.ws.dir, "notes.txt"))
			rec := te.rec.byDir(t, StepDirName(tc.wantStep, tc.wantRole))
			assert.Equal(t, "fail", rec.Status)
			assert.Equal(t, StatusError, rec.Output.Status)
		})
	}

	t.Run("a workspace changed during a built-in check is restored, not failed", func(t *testing.T) {
		// The fake's check worktree is the workspace itself: what the check commands write
		// there stands for a leftover process writing during the check.
		te := newTestEngine(t, always(planWith("echo out > generated.txt")), always(doneAll()), BuiltinCheck{}, BuiltinAct{})
		res := te.run(t, context.Background())
		assert.Equal(t, RunPassed, res.Status)
		assert.NoFileExists(t, filepath.Join(te.ws.dir, "generated.txt"), "check output must not leak into the next commit")
		rec := te.rec.byDir(t, "003-check")
		assert.Equal(t, "ok", rec.Status)
		assert.Contains(t, strings.Join(rec.Output.Summary.Warnings, "\n"), "the workspace changed during the check step")
		assert.Contains(t, te.progress(t), "the workspace changed during the check step")
	})
}

// TestChecksRunInTheCheckTree: the check commands run where Workspace.CheckTree says, on the
// commit Do produced, never in the agent's working directory; the check output and the PASS
// name the tree they ran on.
func TestChecksRunInTheCheckTree(t *testing.T) {
	do := script(func(_ context.Context, _ int, req Request) (Output, error) {
		// written where the agent works, but not where the checks run
		require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "done.txt"), []byte("x"), 0o600))
		return doneAll(), nil
	})
	t.Run("a file only in the agent's directory does not pass", func(t *testing.T) {
		te := newTestEngine(t, always(planWith("test -f done.txt")), do, BuiltinCheck{}, BuiltinAct{})
		te.ws.checkDir = t.TempDir()
		te.opts.Budgets.MaxIterations = 1
		res := te.run(t, context.Background())
		assert.NotEqual(t, RunPassed, res.Status)
		assert.Equal(t, VerdictFail, res.Verdict)
		rec := te.rec.byDir(t, "003-check")
		require.NotNil(t, rec.Output.Check)
		assert.Equal(t, "tree-of-"+te.ws.checkedAt[0], rec.Output.Check.Tree)
	})
	t.Run("the PASS names the checked commit and its tree", func(t *testing.T) {
		te := newTestEngine(t, always(planWith("test -f done.txt")), do, BuiltinCheck{}, BuiltinAct{})
		te.ws.checkDir = t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(te.ws.checkDir, "done.txt"), []byte("x"), 0o600))
		res := te.run(t, context.Background())
		require.Equal(t, RunPassed, res.Status)
		require.Len(t, te.ws.checkedAt, 1)
		assert.Equal(t, te.ws.checkedAt[0], res.VerifiedHead, "checked at the commit Do produced")
		assert.NotEqual(t, "head-0", res.VerifiedHead)
		assert.Equal(t, "tree-of-"+res.VerifiedHead, res.VerifiedTree)
	})
}

func TestRunPatchBudget(t *testing.T) {
	tests := []struct {
		name       string
		patchBytes int64
		actPatch   int64 // when set, the act step's commit grows the patch to this size
		maxKB      int
		wantStatus string
		wantStop   string
		wantStep   int
	}{
		{name: "over max_patch_kb stops after do", patchBytes: 300 * 1024, maxKB: 200, wantStatus: RunStopped, wantStop: StopBudgetExceeded, wantStep: 2},
		{name: "one byte over stops", patchBytes: 200*1024 + 1, maxKB: 200, wantStatus: RunStopped, wantStop: StopBudgetExceeded, wantStep: 2},
		{name: "exactly max_patch_kb passes", patchBytes: 200 * 1024, maxKB: 200, wantStatus: RunPassed, wantStop: StopNone, wantStep: 4},
		{name: "no limit", patchBytes: 50 << 20, maxKB: 0, wantStatus: RunPassed, wantStop: StopNone, wantStep: 4},
		// Regression: a PASS with act deciding close used to win over the budget stop.
		{name: "act step pushing the patch over the limit stops even on PASS", patchBytes: 10 * 1024, actPatch: 300 * 1024, maxKB: 200,
			wantStatus: RunStopped, wantStop: StopBudgetExceeded, wantStep: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			do := script(func(_ context.Context, _ int, req Request) (Output, error) {
				require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "big.bin"), []byte("x"), 0o600))
				return doneAll(), nil
			})
			var act Agent = BuiltinAct{}
			te := newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, nil)
			if tc.actPatch > 0 {
				act = script(func(ctx context.Context, _ int, req Request) (Output, error) {
					te.ws.mu.Lock()
					te.ws.patchBytes = tc.actPatch
					te.ws.mu.Unlock()
					return BuiltinAct{}.Run(ctx, req)
				})
			}
			te.opts.Agents[RoleAct] = RoleAgent{Agent: act}
			te.opts.Budgets.MaxPatchKB = tc.maxKB
			te.ws.patchBytes = tc.patchBytes
			res := te.run(t, context.Background())

			assert.Equal(t, tc.wantStatus, res.Status)
			assert.Equal(t, tc.wantStop, res.StopReason)
			assert.Equal(t, tc.wantStep, res.LastStep)
			if tc.wantStatus == RunStopped {
				assert.Contains(t, res.Message, fmt.Sprintf("over max_patch_kb (%d)", tc.maxKB))
				name := StepDirName(tc.wantStep, Roles[tc.wantStep-1])
				var out Output
				te.readStepJSON(t, name, "output.json", &out)
				assert.Equal(t, StatusStop, out.Status)
				assert.Equal(t, StopBudgetExceeded, out.StopReason)
				assert.Contains(t, strings.Join(out.Summary.Errors, "\n"), "over max_patch_kb")
				assert.NotEmpty(t, te.rec.byDir(t, "002-do").Commit, "the commit happened; the budget stops the run after it")
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	tests := []struct {
		name     string
		plan     Output
		do       func(cancel context.CancelFunc) Agent
		wantStep int
		wantRole Role
	}{
		{name: "during do",
			plan: planWith("true"),
			do: func(cancel context.CancelFunc) Agent {
				return script(func(ctx context.Context, _ int, _ Request) (Output, error) {
					cancel()
					<-ctx.Done()
					return Output{}, ctx.Err()
				})
			},
			wantStep: 2, wantRole: RoleDo},
		{name: "during do whose agent still answers",
			plan: planWith("true"),
			do: func(cancel context.CancelFunc) Agent {
				return script(func(context.Context, int, Request) (Output, error) {
					cancel()
					return doneAll(), nil
				})
			},
			wantStep: 2, wantRole: RoleDo},
		{name: "during check commands",
			plan: planWith("sleep 30"),
			do: func(cancel context.CancelFunc) Agent {
				return script(func(context.Context, int, Request) (Output, error) {
					time.AfterFunc(200*time.Millisecond, cancel)
					return doneAll(), nil
				})
			},
			wantStep: 3, wantRole: RoleCheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			te := newTestEngine(t, always(tc.plan), tc.do(cancel), BuiltinCheck{}, BuiltinAct{})
			start := time.Now()
			res, err := Run(ctx, te.opts)
			require.NoError(t, err, "an interruption is a result, not an orchestrator error")
			assert.Less(t, time.Since(start), 5*time.Second)

			assert.Equal(t, RunStopped, res.Status)
			assert.Equal(t, StopInterrupted, res.StopReason)
			assert.ErrorIs(t, res.Err, context.Canceled)
			assert.Equal(t, tc.wantStep, res.LastStep)
			assert.Contains(t, res.Message, "interrupted during "+string(tc.wantRole))

			// The interrupted step is still recorded, with its output and journal entry.
			recs := te.rec.all()
			require.Len(t, recs, tc.wantStep)
			name := StepDirName(tc.wantStep, tc.wantRole)
			rec := te.rec.byDir(t, name)
			assert.Equal(t, "fail", rec.Status)
			var out Output
			te.readStepJSON(t, name, "output.json", &out)
			assert.Equal(t, StatusError, out.Status)
			assert.Equal(t, "step error: interrupted", out.Progress.Title)
			assert.Len(t, progressHeaders(t, te.progress(t)), tc.wantStep)
			summary, err := os.ReadFile(filepath.Join(te.opts.RunDir, "norma.md"))
			require.NoError(t, err)
			assert.Contains(t, string(summary), "- stop reason: interrupted\n")
			if tc.wantRole == RoleDo {
				assert.Empty(t, te.ws.commits, "an interrupted do is not committed")
			}
		})
	}
}

func TestRunWallTimeBudget(t *testing.T) {
	var te *testEngine
	plan := script(func(context.Context, int, Request) (Output, error) {
		te.clock.Advance(20 * time.Minute)
		return planWith("true"), nil
	})
	do := script(func(context.Context, int, Request) (Output, error) {
		te.clock.Advance(11 * time.Minute)
		return doneAll(), nil
	})
	check := always(checkClaim(VerdictPass, AcceptanceResult{ACID: "AC-1", Result: VerdictPass}))
	te = newTestEngine(t, plan, do, check, always(actDecide(DecisionClose)))
	te.opts.Budgets = Budgets{MaxIterations: 5, MaxWallTimeMinutes: 30}
	te.opts.Agents[RolePlan] = RoleAgent{Agent: plan, Timeout: time.Hour}
	te.opts.Agents[RoleDo] = RoleAgent{Agent: do, Timeout: time.Hour}
	te.opts.StartedAt = te.clock.Now()

	res := te.run(t, context.Background())

	assert.Equal(t, RunStopped, res.Status)
	assert.Equal(t, StopBudgetExceeded, res.StopReason)
	assert.Contains(t, res.Message, "max_wall_time_minutes (30) used up before check")
	assert.Equal(t, 2, res.LastStep)
	assert.Empty(t, check.requests(), "no step starts after the wall time is used up")
	assert.NoDirExists(t, te.stepDir("003-check"))
	assert.Len(t, te.rec.all(), 2)
	// Step timeouts are cut to the wall time that is left.
	require.Len(t, plan.requests(), 1)
	assert.Equal(t, 30*time.Minute, plan.requests()[0].Timeout)
	require.Len(t, do.requests(), 1)
	assert.Equal(t, 10*time.Minute, do.requests()[0].Timeout)
}

func TestRunWallTimeAlreadyUsedUp(t *testing.T) {
	plan := always(planWith("true"))
	te := newTestEngine(t, plan, always(doneAll()), BuiltinCheck{}, BuiltinAct{})
	te.opts.Budgets.MaxWallTimeMinutes = 1
	te.opts.StartedAt = te.clock.Now().Add(-time.Minute)
	res := te.run(t, context.Background())
	assert.Equal(t, RunStopped, res.Status)
	assert.Equal(t, StopBudgetExceeded, res.StopReason)
	assert.Equal(t, 0, res.LastStep)
	assert.Empty(t, plan.requests())
}

func TestRunLastFailureReachesNextIteration(t *testing.T) {
	do := script(func(_ context.Context, call int, req Request) (Output, error) {
		if call == 2 {
			require.NoError(t, os.WriteFile(filepath.Join(req.WorkDir, "done.txt"), []byte("ok"), 0o600))
		}
		return doneSteps("DO-1"), nil
	})
	act := script(func(_ context.Context, _ int, req Request) (Output, error) {
		if req.Input.Check.Verdict.Status == VerdictPass {
			return actDecide(DecisionClose), nil
		}
		return actDecide(DecisionReplan), nil
	})
	te := newTestEngine(t, BuiltinPlan{}, do, BuiltinCheck{}, act)
	te.opts.Task = TaskInput{ID: testTaskID, Title: "Create done.txt", Description: "Objective: create done.txt\nVerify: `test -f done.txt`",
		AcceptanceCriteria: ParseAcceptance("- done.txt exists"), VerifyCommands: []string{"test -f done.txt"}}
	te.opts.Budgets = Budgets{MaxIterations: 3, MaxFailedChecks: 3}

	res := te.run(t, context.Background())

	require.Equal(t, RunPassed, res.Status, res.Message)
	assert.Equal(t, 2, res.Iterations)
	assert.Equal(t, 8, res.LastStep)
	assert.Equal(t, VerdictPass, res.Verdict)

	// The first iteration starts without a failure.
	var in1 Input
	te.readStepJSON(t, "001-plan", "input.json", &in1)
	assert.NotContains(t, in1.Context.Facts, FactLastFailure)
	assert.EqualValues(t, 0, in1.Context.Facts[FactFailedChecks])

	// The second iteration's inputs carry it, on disk for exec agents...
	for _, name := range []string{"005-plan", "006-do", "007-check", "008-act"} {
		var in Input
		te.readStepJSON(t, name, "input.json", &in)
		assert.EqualValues(t, 1, in.Context.Facts[FactFailedChecks], name)
		lf, ok := in.Context.Facts[FactLastFailure].(map[string]any)
		require.True(t, ok, "%s: last_failure = %#v", name, in.Context.Facts[FactLastFailure])
		assert.EqualValues(t, 1, lf["iteration"], name)
		assert.Equal(t, VerdictFail, lf["verdict"], name)
		assert.Contains(t, lf["summary"], "`test -f done.txt` exited 1", name)
		failing, ok := lf["failing"].([]any)
		require.True(t, ok, name)
		require.Len(t, failing, 1, name)
		assert.Equal(t, "test -f done.txt", failing[0].(map[string]any)["cmd"], name)
		assert.Equal(t, "AC-1", failing[0].(map[string]any)["ac_id"], name)
	}
	// ...and in memory for built-in agents, which act on it.
	reqs := do.requests()
	require.Len(t, reqs, 2)
	assert.NotContains(t, reqs[0].Input.Context.Facts, FactLastFailure)
	f, ok := reqs[1].Input.Context.Facts[FactLastFailure].(Failure)
	require.True(t, ok)
	assert.Equal(t, 1, f.Iteration)
	var plan2 Output
	te.readStepJSON(t, "005-plan", "output.json", &plan2)
	assert.Contains(t, plan2.Plan.Constraints, "address the previous failure: "+f.Summary)
	var plan1 Output
	te.readStepJSON(t, "001-plan", "output.json", &plan1)
	assert.Len(t, plan1.Plan.Constraints, len(plan2.Plan.Constraints)-1)
	assert.Equal(t, "create done.txt", res.Plan.Goal)
}

// Orchestrator failures (store, disk, git) end Run with an error and a filled Result; before
// the fix in engine.run they dereferenced a nil *Result and panicked.
func TestRunOrchestratorErrors(t *testing.T) {
	diskFull := errors.New("disk full")
	tests := []struct {
		name     string
		setup    func(te *testEngine)
		wantErr  string
		wantStep int
	}{
		{name: "recorder fails", setup: func(te *testEngine) { te.rec.err = diskFull }, wantErr: "record step 001-plan: disk full", wantStep: 1},
		{name: "snapshot fails", setup: func(te *testEngine) { te.ws.snapErr = diskFull }, wantErr: "snapshot workspace: disk full", wantStep: 1},
		{name: "commit fails", setup: func(te *testEngine) { te.ws.commitErr = diskFull }, wantErr: "commit do step: disk full", wantStep: 2},
		{name: "agent fails outside its contract", setup: func(te *testEngine) {
			te.opts.Agents[RoleDo] = RoleAgent{Agent: script(func(context.Context, int, Request) (Output, error) { return Output{}, diskFull })}
		}, wantErr: "disk full", wantStep: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t, always(planWith("true")), always(doneAll()), BuiltinCheck{}, BuiltinAct{})
			tc.setup(te)
			var res Result
			var err error
			require.NotPanics(t, func() { res, err = Run(context.Background(), te.opts) })
			require.Error(t, err)
			assert.ErrorIs(t, err, diskFull)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Equal(t, RunFailed, res.Status)
			assert.ErrorIs(t, res.Err, diskFull)
			assert.Equal(t, tc.wantStep, res.LastStep)
			assert.Equal(t, 1, res.Iterations)
		})
	}
}

// An exec Check agent shares logs/stdout.txt with the check commands the engine runs first;
// its answer is what it printed, not the whole file. Before the fix in exec_agent.go the
// check commands' log made every exec Check agent fail with invalid_json.
func TestRunWithExecCheckAgent(t *testing.T) {
	claim := `{"status":"ok","summary":{"text":"exec check"},"check":{"acceptance_results":[{"ac_id":"AC-1","result":"PASS"}],"verdict":{"status":"PASS"}}}`
	scripts := t.TempDir()
	checkAgent := ExecAgent{Argv: []string{writeScript(t, scripts, "check.sh", "cat >/dev/null\necho '"+claim+"'")}}
	te := newTestEngine(t, always(planWith("echo check command output; echo more")), always(doneAll()), checkAgent, always(actDecide(DecisionClose)))

	res := te.run(t, context.Background())

	require.Equal(t, RunPassed, res.Status, "%s: %v", res.Message, res.Err)
	rec := te.rec.byDir(t, "003-check")
	assert.Equal(t, "exec check", rec.Output.Summary.Text)
	assert.NotContains(t, eventTypes(rec), "verdict_overridden")
	logs, err := os.ReadFile(filepath.Join(te.stepDir("003-check"), "logs", "stdout.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(logs), "check command output\nmore\n", "the check commands' output stays in the log")
	assert.True(t, strings.HasSuffix(string(logs), claim+"\n"), "the agent's answer follows it")
}

func TestRunWithExecAgents(t *testing.T) {
	scripts := t.TempDir()
	plan := planWith("test -f made-by-do.txt")
	planJSON, err := jsonString(plan)
	require.NoError(t, err)
	doJSON, err := jsonString(doneAll())
	require.NoError(t, err)
	te := newTestEngine(t,
		ExecAgent{Argv: []string{writeScript(t, scripts, "plan.sh", "cat >/dev/null\ncat <<'EOF'\n"+planJSON+"\nEOF")}},
		ExecAgent{Argv: []string{writeScript(t, scripts, "do.sh", "grep -q '\"name\": \"do\"' \"$NORMA_INPUT\" || exit 9\ntouch made-by-do.txt\ncat <<'EOF'\n"+doJSON+"\nEOF")}},
		BuiltinCheck{}, BuiltinAct{})
	res := te.run(t, context.Background())
	require.Equal(t, RunPassed, res.Status, "%s: %v", res.Message, res.Err)
	assert.Equal(t, 4, res.LastStep)
	assert.NotEmpty(t, te.rec.byDir(t, "002-do").Commit)
}

func TestRunExecAgentFailureIsRecorded(t *testing.T) {
	scripts := t.TempDir()
	do := ExecAgent{Argv: []string{writeScript(t, scripts, "do.sh", "echo 'cannot do it' >&2; exit 4")}}
	te := newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, BuiltinAct{})
	res := te.run(t, context.Background())
	assert.Equal(t, RunFailed, res.Status)
	assert.Equal(t, 2, res.LastStep)
	var pe *ProtocolError
	require.True(t, errors.As(res.Err, &pe))
	assert.Equal(t, ErrKindExit, pe.Kind)
	stderr, err := os.ReadFile(filepath.Join(te.stepDir("002-do"), "logs", "stderr.txt"))
	require.NoError(t, err)
	assert.Equal(t, "cannot do it\n", string(stderr))
	assert.Equal(t, []string{"1:plan:ok", "2:do:fail"}, recordRoles(te.rec.all()))
}

func jsonString(v any) (string, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return string(data), err
}

func TestOptionsValidate(t *testing.T) {
	valid := func() Options {
		te := newTestEngine(t, BuiltinPlan{}, always(doneAll()), BuiltinCheck{}, BuiltinAct{})
		return te.opts
	}
	tests := []struct {
		name    string
		mutate  func(o *Options)
		wantErr string
	}{
		{name: "valid", mutate: func(*Options) {}},
		{name: "missing act agent", mutate: func(o *Options) { delete(o.Agents, RoleAct) }, wantErr: "no agent for role act"},
		{name: "nil do agent", mutate: func(o *Options) { o.Agents[RoleDo] = RoleAgent{} }, wantErr: "no agent for role do"},
		{name: "no run id", mutate: func(o *Options) { o.RunID = "" }, wantErr: "run id"},
		{name: "no run dir", mutate: func(o *Options) { o.RunDir = "" }, wantErr: "run dir"},
		{name: "no workspace", mutate: func(o *Options) { o.Workspace = nil }, wantErr: "workspace"},
		{name: "no recorder", mutate: func(o *Options) { o.Recorder = nil }, wantErr: "recorder"},
		{name: "no sandbox", mutate: func(o *Options) { o.Sandbox = nil }, wantErr: "sandbox"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.wantErr)
			_, runErr := Run(context.Background(), o)
			assert.ErrorIs(t, runErr, ErrInvalidOptions)
		})
	}
}

func TestStepDirName(t *testing.T) {
	assert.Equal(t, "001-plan", StepDirName(1, RolePlan))
	assert.Equal(t, "012-act", StepDirName(12, RoleAct))
	assert.Equal(t, "1000-do", StepDirName(1000, RoleDo))
}

// An agent that wrote where no agent may stops the run (a stop rule, not a failed step the
// next iteration could repair): the step is recorded as failed, naming what it wrote.
func TestRunGuardViolationStopsTheRun(t *testing.T) {
	te := newTestEngine(t, always(planWith("true")), always(doneAll()), BuiltinCheck{}, BuiltinAct{})
	te.ws.outside = []string{".git/config: core.bare (set back)", "refs/heads/main (moved back)"}
	res := te.run(t, context.Background())

	assert.Equal(t, RunStopped, res.Status)
	assert.Equal(t, StopGuardViolation, res.StopReason)
	assert.Equal(t, 1, res.LastStep)
	assert.Equal(t, "guard_violation: the plan agent wrote outside the places it may write: .git/config: core.bare (set back), refs/heads/main (moved back)", res.Message)
	recs := te.rec.all()
	require.Len(t, recs, 1)
	assert.Equal(t, "fail", recs[0].Status)
}

// A step cut to the wall time that was left, and stopped when it ran out, ends the run as a
// budget stop (exit 2), not as the agent's failure; its output.json says stop.
func TestRunWallTimeRunsOutDuringAStep(t *testing.T) {
	var te *testEngine
	do := script(func(ctx context.Context, _ int, req Request) (Output, error) {
		te.clock.Advance(2 * time.Minute) // the agent works past the budget, and is stopped
		return Output{}, protocolErrorf(ErrKindTimeout, "agent did not finish within %s; its process group was killed", req.Timeout)
	})
	te = newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, BuiltinAct{})
	te.opts.Budgets = Budgets{MaxIterations: 3, MaxWallTimeMinutes: 1}
	te.opts.StartedAt = te.clock.Now()

	res := te.run(t, context.Background())

	assert.Equal(t, RunStopped, res.Status, res.Message)
	assert.Equal(t, StopBudgetExceeded, res.StopReason)
	assert.Contains(t, res.Message, "max_wall_time_minutes (1) used up during do")
	var out Output
	te.readStepJSON(t, "002-do", "output.json", &out)
	assert.Equal(t, StatusStop, out.Status)
	assert.Equal(t, StopBudgetExceeded, out.StopReason)
}

// A step whose agent fails runs again, as a new step, while max_retries allows for that kind
// of failure; past it the run stops with budget_exceeded. 0 keeps the old way: failed at once.
func TestRunRetriesAFailedAgent(t *testing.T) {
	flaky := func(fails int) *scriptedAgent {
		return script(func(_ context.Context, call int, _ Request) (Output, error) {
			if call <= fails {
				return Output{}, protocolErrorf(ErrKindExit, "agent exited with status 1")
			}
			return doneAll(), nil
		})
	}
	t.Run("passes on the retry", func(t *testing.T) {
		do := flaky(1)
		te := newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, BuiltinAct{})
		te.opts.Budgets.MaxRetries = 1
		res := te.run(t, context.Background())
		require.Equal(t, RunPassed, res.Status, res.Message)
		assert.Len(t, do.requests(), 2)
		assert.DirExists(t, te.stepDir("002-do"), "the failed step is kept")
		assert.DirExists(t, te.stepDir("003-do"), "the retry is a step of its own")
	})
	t.Run("stops when the retries are used up", func(t *testing.T) {
		do := flaky(5)
		te := newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, BuiltinAct{})
		te.opts.Budgets.MaxRetries = 2
		res := te.run(t, context.Background())
		assert.Equal(t, RunStopped, res.Status)
		assert.Equal(t, StopBudgetExceeded, res.StopReason)
		assert.Contains(t, res.Message, "max_retries (2) used up: the do agent failed 3 times with exit_status")
		assert.Len(t, do.requests(), 3)
	})
	t.Run("none by default", func(t *testing.T) {
		do := flaky(1)
		te := newTestEngine(t, always(planWith("true")), do, BuiltinCheck{}, BuiltinAct{})
		res := te.run(t, context.Background())
		assert.Equal(t, RunFailed, res.Status)
		assert.Len(t, do.requests(), 1)
	})
}

// TestRunCollectsDiscoveredWork: what Do reports it found, but must not do now, comes back in
// the Result for the orchestrator to file.
func TestRunCollectsDiscoveredWork(t *testing.T) {
	do := answerOutput(t, RoleDo)
	require.NotEmpty(t, do.Do.Discovered, "the Do answer reports work it found")
	te := newTestEngine(t, always(answerOutput(t, RolePlan)), always(do), always(answerOutput(t, RoleCheck)), always(answerOutput(t, RoleAct)))

	res := te.run(t, context.Background())

	assert.Equal(t, do.Do.Discovered, res.Discovered)
}
