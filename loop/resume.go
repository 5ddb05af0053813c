package loop

import (
	"context"
	"path/filepath"
)

// notRun returns the output of a step that does not run again: the plan, after Act decided
// continue, or a role the earlier run completed, in the first iteration of a resumed run.
func (e *engine) notRun(role Role) (Output, bool) {
	if role == RolePlan && e.reusePlan {
		return e.reusedPlan(), true
	}
	// A Check always runs again: its result may land, and what the tracker says it found is a
	// hint, not evidence this run produced on the tree it would land.
	if e.iteration != 1 || role == RoleCheck {
		return Output{}, false
	}
	return e.o.Resume.output(role)
}

// skip records a step the earlier run already completed: its directory, input and restored
// output exist like any step's, the row says skipped, and the engine carries on from it.
func (e *engine) skip(ctx context.Context, role Role, out Output) error {
	s, err := e.newStep(role)
	if err != nil {
		return err
	}
	s.out, s.skipped = out, true
	s.stdout.Close()
	s.stderr.Close()
	// Nothing runs in a skipped step. Only a resumed Plan can come before the engine knows
	// HEAD, and a plan step does not write.
	if err := e.snapshot(ctx, s, true); err != nil {
		return err
	}
	s.input = e.input(s)
	if err := writeJSON(filepath.Join(s.dir, "input.json"), s.input); err != nil {
		return err
	}
	switch role {
	case RolePlan:
		// A restored plan is a hint like any tracker state: the required checks are enforced
		// on it as on a plan a Plan agent just wrote.
		s.out.Plan = e.enforcePlan(s, out.Plan)
		e.plan = s.out.Plan
	case RoleDo:
		e.do = out.Do
	}
	return e.record(ctx, s)
}
