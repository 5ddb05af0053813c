package loop

import (
	"fmt"
	"slices"
	"strings"
)

// ValidateOutput checks an agent's output against its role's contract and fills the defaults
// the contract allows to be omitted (stop_reason "none", expect_exit_codes [0], the plan's
// task id). A violation is a *ProtocolError of kind contract_violation.
func ValidateOutput(role Role, taskID string, out *Output) error {
	switch out.Status {
	case StatusOK, StatusError:
		if out.StopReason == "" {
			out.StopReason = StopNone
		}
		if out.StopReason != StopNone {
			return contractf("status %s cannot carry stop_reason %q (use status stop, or stop_reason none)", out.Status, out.StopReason)
		}
	case StatusStop:
		if !slices.Contains(StopReasonsAllowed, out.StopReason) {
			return contractf("status is stop but stop_reason %q is not one of %v", out.StopReason, StopReasonsAllowed)
		}
		return nil
	default:
		return contractf("status must be ok, stop or error, got %q", out.Status)
	}
	if out.Status == StatusError {
		return nil
	}
	switch role {
	case RolePlan:
		return validatePlan(taskID, out.Plan)
	case RoleDo:
		if out.Do == nil {
			return contractf("a do output needs a \"do\" object with \"execution\"")
		}
		if len(out.Do.Discovered) > MaxNewIssues {
			return contractf("do.discovered lists %d issues; at most %d are filed from one step", len(out.Do.Discovered), MaxNewIssues)
		}
	case RoleCheck:
		if out.Check == nil {
			return contractf("a check output needs a \"check\" object")
		}
		if !slices.Contains([]string{VerdictPass, VerdictFail, VerdictPartial}, out.Check.Verdict.Status) {
			return contractf("check.verdict.status must be PASS, FAIL or PARTIAL, got %q", out.Check.Verdict.Status)
		}
	case RoleAct:
		if out.Act == nil {
			return contractf("an act output needs an \"act\" object")
		}
		if !slices.Contains([]string{DecisionClose, DecisionReplan, DecisionRollback, DecisionContinue}, out.Act.Decision) {
			return contractf("act.decision must be close, replan, rollback or continue, got %q", out.Act.Decision)
		}
	}
	return nil
}

func validatePlan(taskID string, p *Plan) error {
	if p == nil {
		return contractf("a plan output needs a \"plan\" object")
	}
	if p.TaskID == "" {
		p.TaskID = taskID
	}
	if p.TaskID != taskID {
		return contractf("plan.task_id is %q but the task is %q", p.TaskID, taskID)
	}
	switch p.Outcome {
	case "", OutcomeReady:
		p.Outcome = OutcomeReady
	case OutcomeDecompose:
		return validateDecompose(p)
	case OutcomeBlocked:
		return validateBlocked(p)
	default:
		return contractf("plan.outcome must be READY, DECOMPOSE or BLOCKED, got %q", p.Outcome)
	}
	if len(p.AcceptanceCriteria.Effective) == 0 {
		return contractf("plan.acceptance_criteria.effective is empty: every task needs criteria with checks")
	}
	seen := map[string]bool{}
	for i := range p.AcceptanceCriteria.Effective {
		ac := &p.AcceptanceCriteria.Effective[i]
		if ac.ID == "" || seen[ac.ID] {
			return contractf("effective criterion %d has an empty or duplicate id %q", i+1, ac.ID)
		}
		seen[ac.ID] = true
		for j := range ac.Checks {
			c := &ac.Checks[j]
			if c.ID == "" || c.Cmd == "" {
				return contractf("check %d of %s needs an id and a cmd", j+1, ac.ID)
			}
			if len(c.ExpectExitCodes) == 0 {
				c.ExpectExitCodes = []int{0}
			}
		}
	}
	if len(p.WorkPlan.DoSteps) == 0 {
		return contractf("plan.work_plan.do_steps is empty")
	}
	steps := map[string]bool{}
	for _, s := range p.WorkPlan.DoSteps {
		if s.ID == "" || steps[s.ID] {
			return contractf("do step has an empty or duplicate id %q", s.ID)
		}
		steps[s.ID] = true
	}
	return nil
}

// MaxNewIssues bounds the issues one output has filed in the backlog (Do's discoveries, a
// DECOMPOSE's children): one answer of an agent must not flood the backlog it shares with you.
const MaxNewIssues = 50

// validateDecompose checks a DECOMPOSE: new children with unique keys, blocks edges only
// between them, and next_task_id naming one. Anything that points outside the new subtree is a
// mutation Plan is not allowed to make (spec "Plan agent forbidden").
func validateDecompose(p *Plan) error {
	if len(p.Children) == 0 {
		return contractf("outcome DECOMPOSE needs at least one entry in plan.children")
	}
	if len(p.Children) > MaxNewIssues {
		return contractf("plan.children lists %d issues; at most %d are created from one plan", len(p.Children), MaxNewIssues)
	}
	keys, err := newIssueKeys(p.Children)
	if err != nil {
		return err
	}
	if !keys[p.NextTaskID] {
		return contractf("plan.next_task_id %q must be the key of one of plan.children", p.NextTaskID)
	}
	return nil
}

func validateBlocked(p *Plan) error {
	if p.Prerequisite == nil {
		return contractf("outcome BLOCKED needs plan.prerequisite")
	}
	if _, err := newIssueKeys([]NewIssue{*p.Prerequisite}); err != nil {
		return err
	}
	if p.NextTaskID != "" && p.NextTaskID != p.Prerequisite.Key {
		return contractf("plan.next_task_id %q must be the prerequisite's key %q (or empty)", p.NextTaskID, p.Prerequisite.Key)
	}
	return nil
}

// newIssueKeys checks keys, titles and blocks of issues to create.
func newIssueKeys(issues []NewIssue) (map[string]bool, error) {
	keys := map[string]bool{}
	for i, n := range issues {
		if n.Key == "" || keys[n.Key] {
			return nil, contractf("new issue %d has an empty or duplicate key %q", i+1, n.Key)
		}
		if strings.TrimSpace(n.Title) == "" {
			return nil, contractf("new issue %q has no title", n.Key)
		}
		if n.Priority != nil && (*n.Priority < 0 || *n.Priority > 4) {
			return nil, contractf("new issue %q has priority %d (0-4)", n.Key, *n.Priority)
		}
		keys[n.Key] = true
	}
	for _, n := range issues {
		for _, b := range n.Blocks {
			if !keys[b] || b == n.Key {
				return nil, contractf("new issue %q blocks %q, which is not another new issue of this plan: Plan may only link issues it creates", n.Key, b)
			}
		}
	}
	return keys, nil
}

// MissingChecks lists the effective criteria that have no executable check.
func MissingChecks(effective []EffectiveCriterion) []string {
	var ids []string
	for _, ac := range effective {
		if len(ac.Checks) == 0 {
			ids = append(ids, ac.ID)
		}
	}
	return ids
}

func contractf(format string, args ...any) error {
	return &ProtocolError{Kind: ErrKindContract, Msg: fmt.Sprintf(format, args...)}
}
