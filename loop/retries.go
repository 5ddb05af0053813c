package loop

import (
	"context"
	"errors"
)

// retryKinds are the agent failures a step is run again for: the agent's own trouble (a crash,
// a hang, an answer that does not read), not a rule it broke (workspace, guard), which a second
// try would only repeat.
var retryKinds = map[string]bool{ErrKindStart: true, ErrKindExit: true, ErrKindTimeout: true,
	ErrKindInvalidJSON: true, ErrKindContract: true, ErrKindTooLarge: true}

// stepWithRetries runs role's step, and again — as a new step, the failed one recorded —
// while its agent fails in a way worth another try and Budgets.MaxRetries allows, per kind of
// failure; past that the run stops with budget_exceeded.
func (e *engine) stepWithRetries(ctx context.Context, role Role) (Output, *Result, error) {
	for {
		out, end, err := e.step(ctx, role)
		var pe *ProtocolError
		if err != nil || end == nil || e.o.Budgets.MaxRetries <= 0 || end.Status != RunFailed ||
			!errors.As(end.Err, &pe) || !retryKinds[pe.Kind] || ctx.Err() != nil {
			return out, end, err
		}
		if e.retries == nil {
			e.retries = map[string]int{}
		}
		e.retries[pe.Kind]++
		if e.retries[pe.Kind] > e.o.Budgets.MaxRetries {
			return out, stopped(StopBudgetExceeded, "max_retries (%d) used up: the %s agent failed %d times with %s (last: %s)",
				e.o.Budgets.MaxRetries, role, e.retries[pe.Kind], pe.Kind, OneLine(pe.Msg, 200)), nil
		}
	}
}
