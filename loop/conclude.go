package loop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
)

// input builds the step's input.json: the common part plus what the role needs (spec 8).
func (e *engine) input(s *stepRun) Input {
	mode := "read_only"
	if s.role.Writes() {
		mode = "read_write"
	}
	facts := map[string]any{FactFailedChecks: e.failedChecks}
	maps.Copy(facts, e.facts)
	in := Input{
		Run:  RunRef{ID: e.o.RunID, Iteration: e.iteration},
		Task: e.o.Task,
		Step: StepRef{Index: s.index, Name: s.role, Dir: s.dir},
		Paths: Paths{
			WorkspaceDir: e.o.Workspace.Dir(), WorkspaceMode: mode,
			ArtifactsDir: filepath.Join(e.o.RunDir, "artifacts"),
			ProgressPath: filepath.Join(e.o.RunDir, "artifacts", "progress.md"),
		},
		Budgets:            e.o.Budgets,
		StopReasonsAllowed: StopReasonsAllowed,
		Context:            Context{Facts: facts, Links: []string{}, Attempt: e.iteration - 1},
	}
	if s.role != RolePlan {
		in.Plan = e.plan
	}
	if s.role == RoleCheck || s.role == RoleAct {
		in.Do = e.do
	}
	if s.role == RoleAct {
		in.Check = e.check
	}
	return in
}

// conclude applies the orchestrator's rules to the step's output and decides whether the run
// ends here. It never trusts an agent's verdict: Check's is recomputed from the evidence.
func (e *engine) conclude(ctx context.Context, s *stepRun, agentErr error) *Result {
	if agentErr != nil {
		usage := s.out.Usage // what a failed CLI run still cost
		s.out = errorOutput(agentErr)
		s.out.Usage = usage
		if errors.Is(agentErr, context.Canceled) || ctx.Err() != nil {
			return &Result{Status: RunStopped, StopReason: StopInterrupted, Message: "interrupted during " + string(s.role), Err: ctx.Err()}
		}
		var pe *ProtocolError
		if errors.As(agentErr, &pe) && pe.Kind == ErrKindGuard {
			return &Result{Status: RunStopped, StopReason: StopGuardViolation, Message: agentErr.Error(), Err: agentErr}
		}
		if _, left := e.remaining(); errors.As(agentErr, &pe) && pe.Kind == ErrKindTimeout && !left {
			// The step was cut to the wall time that was left: the budget ran out, the agent
			// did not fail.
			s.out.Status, s.out.StopReason = StatusStop, StopBudgetExceeded
			return stopped(StopBudgetExceeded, "max_wall_time_minutes (%d) used up during %s; its processes were stopped", e.o.Budgets.MaxWallTimeMinutes, s.role)
		}
		return failed(fmt.Errorf("%s step %03d: %w", s.role, s.index, agentErr))
	}
	switch s.role {
	case RolePlan:
		e.concludePlan(s)
		if s.out.Status == StatusOK {
			if end := planOutcome(s.out.Plan); end != nil {
				return end
			}
		}
	case RoleDo:
		e.do = s.out.Do
		if s.out.Status == StatusOK && s.out.Do != nil {
			e.discovered = append(e.discovered, s.out.Do.Discovered...)
		}
	case RoleCheck:
		if end := e.concludeCheck(s); end != nil {
			return end
		}
	case RoleAct:
		closing := s.out.Status == StatusOK && s.out.Act.Decision == DecisionClose
		switch {
		case closing && e.check.Verdict.Status != VerdictPass:
			s.events = append(s.events, Event{Type: "close_refused",
				Message: fmt.Sprintf("act decided close but the verdict is %s; continuing", e.check.Verdict.Status)})
			s.out.Summary.Warnings = append(s.out.Summary.Warnings, "close refused: the verdict is not PASS")
		case closing && e.head != e.checkedHead:
			// The PASS is for what Check ran on; Act's own changes are unverified.
			s.events = append(s.events, Event{Type: "close_refused",
				Message: fmt.Sprintf("act changed the workspace after the check (%.10s, checked %.10s); another iteration verifies it", e.head, e.checkedHead)})
			s.out.Summary.Warnings = append(s.out.Summary.Warnings, "close refused: act changed what check verified")
		}
		if err := e.applyDecision(ctx, s); err != nil {
			s.out = errorOutput(err)
			return failed(err)
		}
		if s.out.Status == StatusOK && s.out.Act != nil {
			e.facts[FactLastAct] = *s.out.Act
		}
	}
	switch s.out.Status {
	case StatusStop:
		if s.role == RoleAct {
			return nil // afterAct weighs Act's stop against the budgets it enforces itself
		}
		return stopped(s.out.StopReason, "%s stopped: %s", s.role, stopText(s.out))
	case StatusError:
		return failed(fmt.Errorf("%s step %03d reported an error: %s", s.role, s.index, stopText(s.out)))
	}
	return nil
}

func stopText(out Output) string {
	if len(out.Summary.Errors) > 0 {
		return out.Summary.Errors[len(out.Summary.Errors)-1]
	}
	if out.Summary.Text != "" {
		return out.Summary.Text
	}
	return out.StopReason
}

func (e *engine) concludePlan(s *stepRun) {
	if s.out.Status != StatusOK {
		return
	}
	if s.out.Plan.Outcome != OutcomeReady {
		e.plan = s.out.Plan
		return
	}
	s.out.Plan = e.enforcePlan(s, s.out.Plan)
	if missing := MissingChecks(s.out.Plan.AcceptanceCriteria.Effective); len(missing) > 0 {
		s.out.Status, s.out.StopReason = StatusStop, StopVerifyMissing
		s.out.Summary.Errors = append(s.out.Summary.Errors,
			fmt.Sprintf("criteria %v have no executable check, so they cannot be verified", missing))
		return
	}
	e.plan = s.out.Plan
}

// concludeCheck replaces whatever the agent concluded with the evidence-based result, keeping
// only the agent's findings that make it stricter. A failure exactly like the previous
// iteration's ends the run (no_progress).
func (e *engine) concludeCheck(s *stepRun) *Result {
	claimed := s.out.Check
	final := evaluate(e.plan, e.do, s.input.Evidence)
	if claimed != nil {
		final.AcceptanceResults = MergeResults(final.AcceptanceResults, claimed.AcceptanceResults)
		final.Verdict = ComputeVerdict(e.plan.AcceptanceCriteria.Effective, final.AcceptanceResults, final.PlanMatch)
		final.ProcessNotes = append(final.ProcessNotes, claimed.ProcessNotes...)
		if claimed.Verdict.Status != final.Verdict.Status {
			msg := fmt.Sprintf("the check agent claimed %s; the evidence says %s", claimed.Verdict.Status, final.Verdict.Status)
			s.events = append(s.events, Event{Type: "verdict_overridden", Message: msg})
			s.out.Summary.Warnings = append(s.out.Summary.Warnings, msg)
		}
	}
	final.Tree = s.tree
	s.out.Check = final
	e.check = final
	e.checkedHead, e.checkedTree = s.snap.Head, s.tree
	s.events = append(s.events, Event{Type: "verdict", Message: final.Verdict.Status,
		Data: map[string]any{"verdict": final.Verdict.Status, "iteration": e.iteration}})
	if final.Verdict.Status == VerdictPass {
		e.failure, e.sameFailures = nil, 0
		return nil
	}
	e.failedChecks++
	f := NewFailure(e.iteration, final)
	switch prev := e.failure; {
	case prev == nil:
		e.sameFailures = 1
	case f.Same(*prev):
		e.sameFailures++
	default:
		f.Changes = f.ChangesFrom(*prev)
		e.sameFailures = 1
	}
	e.failure = &f
	e.facts[FactLastFailure] = f
	s.events = append(s.events, Event{Type: FailureEvent, Message: f.Summary, Data: f})
	if n := e.o.Budgets.MaxSameFailures; n > 0 && e.sameFailures >= n && s.out.Status == StatusOK {
		return stopped(StopNoProgress, "no progress: %d iterations in a row failed exactly alike (%s)",
			e.sameFailures, strings.TrimPrefix(f.Summary, fmt.Sprintf("iteration %d %s: ", f.Iteration, f.Verdict)))
	}
	return nil
}

// record writes output.json, commits the step to the store (the commit point), then appends
// the journal entry and prints the live line.
func (e *engine) record(ctx context.Context, s *stepRun) error {
	ended := e.o.Now()
	rel := filepath.ToSlash(filepath.Join("steps", StepDirName(s.index, s.role)))
	s.out.Logs = Logs{StdoutPath: rel + "/logs/stdout.txt", StderrPath: rel + "/logs/stderr.txt"}
	s.out.Timing.WallTimeMS = ended.Sub(s.started).Milliseconds()
	s.out.Progress.Links = map[string]string{"stdout": s.out.Logs.StdoutPath, "stderr": s.out.Logs.StderrPath}
	s.out.Summary.Warnings = nonNil(s.out.Summary.Warnings)
	s.out.Summary.Errors = nonNil(s.out.Summary.Errors)
	if err := writeJSON(filepath.Join(s.dir, "output.json"), s.out); err != nil {
		return err
	}
	if s.commit != "" {
		s.snap.Head = s.commit
	}
	status := "ok"
	switch {
	case s.skipped:
		status = "skipped"
	case s.out.Status == StatusError:
		status = "fail"
	}
	rec := StepRecord{
		RunID: e.o.RunID, Index: s.index, Role: s.role, Iteration: e.iteration, Status: status,
		Dir: s.dir, StartedAt: s.started, EndedAt: ended, Summary: OneLine(s.out.Summary.Text, 300),
		Output: s.out, Commit: s.commit, Head: s.snap.Head, Events: s.events,
	}
	_, rec.Builtin = e.o.Agents[s.role].Agent.(pure)
	if err := e.o.Recorder.CommitStep(context.WithoutCancel(ctx), rec); err != nil {
		return fmt.Errorf("record step %03d-%s: %w", s.index, s.role, err)
	}
	if err := appendProgress(e.o.RunDir, e.o.Task.ID, e.o.RunID, rec); err != nil {
		return err
	}
	if err := e.writeSummary(nil); err != nil {
		return err
	}
	p := Live{Kind: StepEnded, TaskID: e.o.Task.ID, Index: s.index, Role: s.role, Status: s.out.Status,
		Summary: OneLine(s.out.Summary.Text, 100), Duration: ended.Sub(s.started), LogDir: filepath.Join(s.dir, "logs")}
	if s.skipped {
		p.Status = "skip"
	}
	if s.out.Check != nil {
		p.Verdict = s.out.Check.Verdict.Status
		if p.Verdict != VerdictPass && e.failure != nil {
			p.Failure = e.failure
		}
	}
	for _, ev := range s.events {
		if ev.Type == DeniedEvent || ev.Type == KilledEvent || ev.Type == TamperedEvent {
			p.Notices = append(p.Notices, ev)
		}
	}
	e.o.Live.report(p)
	return nil
}
