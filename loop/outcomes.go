package loop

import (
	"context"
	"fmt"
)

// StopDecomposed is the stop reason of a run whose Plan decomposed the task: the orchestrator
// creates the children and goes on with the one Plan named.
const StopDecomposed = "decomposed"

// Gate is a project-wide check every task must pass (config `gates`), added to each plan's
// effective criteria with origin "gate" so no Plan agent can leave it out.
type Gate struct {
	Name string `json:"name"`
	Cmd  string `json:"cmd"`
}

// GateCriterion is the effective criterion a gate becomes.
func GateCriterion(g Gate) EffectiveCriterion {
	id := "GATE-" + g.Name
	return EffectiveCriterion{
		ID: id, Origin: "gate", Text: fmt.Sprintf("project gate %s: `%s` succeeds", g.Name, g.Cmd),
		Checks: []CheckSpec{{ID: "CHK-" + id, Cmd: g.Cmd, ExpectExitCodes: []int{0}}},
		Reason: "required of every task by the project's gates",
	}
}

// planOutcome ends the run when Plan decomposed the task or found it blocked: applying the
// outcome is the orchestrator's job, outside the loop.
func planOutcome(p *Plan) *Result {
	switch p.Outcome {
	case OutcomeDecompose:
		return stopped(StopDecomposed, "plan decomposed the task into %d children; next: %s", len(p.Children), p.NextTaskID)
	case OutcomeBlocked:
		return stopped(StopDependencyBlocked, "plan found the task blocked by a missing prerequisite: %s", p.Prerequisite.Title)
	}
	return nil
}

// applyDecision gives Act's decision its effect on the next iteration (spec 8.4): continue
// keeps the plan; rollback moves the task branch back to before this iteration's Do (the
// abandoned commits stay under refs/norma/attempts/) and replans; replan replans.
func (e *engine) applyDecision(ctx context.Context, s *stepRun) error {
	e.reusePlan = false
	if s.out.Status != StatusOK || s.out.Act == nil {
		return nil
	}
	switch s.out.Act.Decision {
	case DecisionContinue:
		e.reusePlan = true
	case DecisionRollback:
		if e.preDo == "" {
			s.out.Summary.Warnings = append(s.out.Summary.Warnings, "rollback: this iteration's Do did not run here, nothing to roll back")
			return nil
		}
		saved, err := e.o.Workspace.Rollback(ctx, e.preDo)
		if err != nil {
			return fmt.Errorf("roll back to %.10s: %w", e.preDo, err)
		}
		e.head = e.preDo
		msg := fmt.Sprintf("task branch moved back to %.10s", e.preDo)
		if saved != "" {
			msg += "; the abandoned commits are kept at " + saved
		}
		s.events = append(s.events, Event{Type: "rolled_back", Message: msg, Data: map[string]any{"to": e.preDo, "saved_ref": saved}})
		s.out.Summary.Warnings = append(s.out.Summary.Warnings, msg)
	}
	return nil
}

// reusedPlan is the skipped plan step of an iteration after Act decided continue.
func (e *engine) reusedPlan() Output {
	return Output{Status: StatusOK, StopReason: StopNone, Plan: e.plan,
		Summary:  Summary{Text: "same plan: act decided continue"},
		Progress: Progress{Title: "Plan kept (act: continue)", Details: []string{"the previous iteration's plan still holds; the failure goes to Do"}}}
}
