package loop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// Run outcomes (the store's run statuses).
const (
	RunPassed  = "passed"
	RunFailed  = "failed"
	RunStopped = "stopped"
)

// Stop reasons the engine itself gives a run.
const (
	// StopInterrupted: Ctrl-C or SIGTERM.
	StopInterrupted = "interrupted"
	// StopPaused: a pause request found between two steps.
	StopPaused = "paused"
	// StopGuardViolation: an agent wrote outside the places it may write (see ErrKindGuard).
	StopGuardViolation = "guard_violation"
	// StopNoProgress: Check failed twice in a row in exactly the same way (Failure.Same);
	// another iteration would most likely burn its budget the same way.
	StopNoProgress = "no_progress"
)

// Options configure one run of the engine.
type Options struct {
	RunID   string
	RunDir  string
	Task    TaskInput
	Budgets Budgets
	Agents  map[Role]RoleAgent
	// Workspace and Recorder are the engine's only ways to touch git and the store.
	Workspace Workspace
	Recorder  Recorder
	// Env is the environment every process of the run starts from, agents and check commands
	// alike: the application's own, without the variables that would point git at another
	// repository (a hook's GIT_DIR, say). nil: this process's environment.
	Env []string
	// Live receives each step as it starts and ends (rendered on stderr by the CLI).
	Live LiveFunc
	// Now is the clock; StartedAt is when the wall-time budget started.
	Now       func() time.Time
	StartedAt time.Time
	// Facts seed context.facts, e.g. the previous run's last failure.
	Facts map[string]any
	// Resume holds what an earlier run completed of its unfinished iteration; the first
	// iteration records those steps as skipped instead of running them again.
	Resume *Resume
	// Halt is asked before every step; a non-empty reason stops the run with it (StopPaused
	// for a pause), why saying what happened.
	Halt func() (reason, why string)
	// Gates are added to every plan's effective criteria; like the task's Verify commands, no
	// plan may drop or alter them (required.go).
	Gates []Gate
	// Sandbox confines every process a step starts.
	Sandbox *Sandbox
}

// Resume is the completed prefix (plan, then do) of an interrupted iteration, read from the
// tracker: a hint of where to resume work, never evidence. There is no Check in it: a Check's
// result could land, so it always runs again, on the workspace as it is now.
type Resume struct {
	// From is the run that produced the outputs.
	From string
	Plan *Plan
	Do   *Do
}

// output returns the stored output of role, if the resumed prefix covers it.
func (r *Resume) output(role Role) (Output, bool) {
	if r == nil || r.Plan == nil {
		return Output{}, false
	}
	out := Output{Status: StatusOK, StopReason: StopNone,
		Summary: Summary{Text: fmt.Sprintf("resumed: %s completed by run %s", role, r.From)}}
	switch {
	case role == RolePlan:
		out.Plan = r.Plan
	case role == RoleDo && r.Do != nil:
		out.Do = r.Do
	default:
		return Output{}, false
	}
	out.Progress = Progress{Title: out.Summary.Text, Details: []string{"not run again: its output was restored from the task's state"}}
	return out, true
}

// RoleAgent is the agent configured for a role and its step timeout.
type RoleAgent struct {
	Agent   Agent
	Timeout time.Duration
	// Name describes the agent in logs ("builtin", "exec ./agent").
	Name string
}

// ErrInvalidOptions is returned by Options.Validate.
var ErrInvalidOptions = errors.New("invalid loop options")

// Validate checks that every role has an agent and the collaborators are set.
func (o Options) Validate() error {
	for _, r := range Roles {
		if o.Agents[r].Agent == nil {
			return fmt.Errorf("%w: no agent for role %s", ErrInvalidOptions, r)
		}
	}
	if o.RunID == "" || o.RunDir == "" || o.Workspace == nil || o.Recorder == nil {
		return fmt.Errorf("%w: run id, run dir, workspace and recorder are required", ErrInvalidOptions)
	}
	if o.Sandbox == nil {
		return fmt.Errorf("%w: a sandbox is required", ErrInvalidOptions)
	}
	return nil
}

// Result is how a run ended.
type Result struct {
	// Status is passed, failed or stopped.
	Status     string
	StopReason string
	// Verdict is the last Check verdict (PASS, FAIL, PARTIAL) or "".
	Verdict    string
	Iterations int
	LastStep   int
	// Message says in one line why the run ended.
	Message string
	Plan    *Plan
	Check   *Check
	// Failure is the last failed Check's, when the run did not pass: what the user needs to
	// know why.
	Failure *Failure
	// VerifiedHead is the workspace commit a PASS holds for: the one its Check ran on.
	VerifiedHead string
	// VerifiedTree is the tree id VerifiedHead's Check ran its commands on.
	VerifiedTree string
	// Discovered collects what every Do step reported as found work, for the orchestrator
	// to file.
	Discovered []Discovery
	// Err is the step error that failed the run, or the interruption.
	Err error
}

// Run drives Plan → Do → Check → Act until a PASS closes the task, a step fails, or a budget
// or stop rule ends it. It returns an error only when the orchestrator itself cannot go on
// (the store or the disk failed); agent failures are a Result with status failed.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.StartedAt.IsZero() {
		o.StartedAt = o.Now()
	}
	e := &engine{o: o, facts: map[string]any{}, private: &privateDir{}, launcher: &launcher{}}
	defer e.private.remove()
	defer e.launcher.close()
	maps.Copy(e.facts, o.Facts)
	if err := e.writeSummary(nil); err != nil {
		return Result{}, err
	}
	res, err := e.run(ctx)
	if err == nil {
		err = e.writeSummary(&res)
	}
	return res, err
}

// engine is the state of one run between steps.
type engine struct {
	o            Options
	iteration    int
	index        int
	failedChecks int
	// retries counts the steps run again, by kind of agent failure (Budgets.MaxRetries).
	retries map[string]int
	// failure is this run's last failed Check, which the next one is compared with;
	// sameFailures counts the iterations in a row that failed exactly like it.
	failure      *Failure
	sameFailures int
	facts        map[string]any
	plan         *Plan
	do           *Do
	check        *Check
	// checkedHead is the workspace HEAD the last Check verified: a PASS holds for it only.
	checkedHead string
	// checkedTree is the tree the last Check's commands ran on.
	checkedTree string
	// reusePlan: Act decided continue, so the next iteration keeps the plan.
	reusePlan bool
	// preDo is the workspace head before this iteration's Do, for a rollback.
	preDo string
	// head is the workspace HEAD as the engine last saw or left it ("" before the first
	// snapshot): where a pure agent's step is recorded.
	head       string
	discovered []Discovery
	// cost is what the agents reported spending so far.
	cost float64
	// summary is norma.md as last written.
	summary string
	// private is the directory the run's confined processes get (see privateDir).
	private *privateDir
	// launcher starts them.
	launcher *launcher
}

// chargeCost adds a step's reported cost and stops the run once max_cost_usd is reached.
func (e *engine) chargeCost(u *Usage) *Result {
	if u == nil {
		return nil
	}
	e.cost += u.CostUSD
	if limit := e.o.Budgets.MaxCostUSD; limit > 0 && e.cost >= limit {
		return stopped(StopBudgetExceeded, "max_cost_usd (%.2f) reached: the agents reported $%.4f so far", limit, e.cost)
	}
	return nil
}

func (e *engine) run(ctx context.Context) (Result, error) {
	for e.iteration = 1; ; e.iteration++ {
		e.do, e.check, e.preDo = nil, nil, ""
		for _, role := range Roles {
			if end := e.haltRequested(role); end != nil {
				return e.finish(end), nil
			}
			if out, ok := e.notRun(role); ok {
				if err := e.skip(ctx, role, out); err != nil {
					return e.finish(failed(err)), err
				}
				continue
			}
			out, end, err := e.stepWithRetries(ctx, role)
			if err != nil {
				return e.finish(failed(err)), err
			}
			if end != nil {
				return e.finish(end), nil
			}
			if role == RoleAct {
				if end := e.afterAct(out); end != nil {
					return e.finish(end), nil
				}
			}
		}
	}
}

// haltRequested stops the run before role when a pause was requested, or another reason to
// go no further came up (Options.Halt).
func (e *engine) haltRequested(role Role) *Result {
	if e.o.Halt == nil {
		return nil
	}
	switch reason, why := e.o.Halt(); reason {
	case "":
		return nil
	case StopPaused:
		return stopped(reason, "paused before %s: %s", role, why)
	default:
		return stopped(reason, "stopped before %s: %s", role, why)
	}
}

// finish fills the fields every result carries.
func (e *engine) finish(r *Result) Result {
	r.Iterations, r.LastStep, r.Plan, r.Check = e.iteration, e.index, e.plan, e.check
	if r.Status != RunPassed {
		r.Failure = e.failure
	}
	r.Discovered = e.discovered
	if e.check != nil {
		r.Verdict = e.check.Verdict.Status
	}
	return *r
}

// afterAct applies Act's decision and the budgets: nil means another iteration.
func (e *engine) afterAct(out Output) *Result {
	verdict := e.check.Verdict.Status
	if out.Status == StatusOK && out.Act.Decision == DecisionClose && verdict == VerdictPass && e.head == e.checkedHead {
		return &Result{Status: RunPassed, StopReason: StopNone, Message: "PASS: every acceptance criterion verified", VerifiedHead: e.checkedHead, VerifiedTree: e.checkedTree}
	}
	b := e.o.Budgets
	switch {
	case b.MaxIterations > 0 && e.iteration >= b.MaxIterations:
		return stopped(StopBudgetExceeded, "max_iterations (%d) reached without a PASS (last verdict %s)", b.MaxIterations, verdict)
	case b.MaxFailedChecks > 0 && e.failedChecks >= b.MaxFailedChecks:
		return stopped(StopBudgetExceeded, "max_failed_checks (%d) reached (last verdict %s)", b.MaxFailedChecks, verdict)
	case out.Status == StatusStop:
		return stopped(out.StopReason, "act stopped: %s", stopText(out))
	}
	return nil
}

func stopped(reason, format string, args ...any) *Result {
	return &Result{Status: RunStopped, StopReason: reason, Message: fmt.Sprintf(format, args...)}
}

func failed(err error) *Result {
	return &Result{Status: RunFailed, StopReason: StopNone, Message: err.Error(), Err: err}
}

// remaining is the wall-time budget left, or 0 when there is no wall-time budget.
func (e *engine) remaining() (time.Duration, bool) {
	if e.o.Budgets.MaxWallTimeMinutes <= 0 {
		return 0, true
	}
	left := time.Duration(e.o.Budgets.MaxWallTimeMinutes)*time.Minute - e.o.Now().Sub(e.o.StartedAt)
	return left, left > 0
}

// stepTimeout is the role's timeout, cut to the wall-time budget that is left.
func (e *engine) stepTimeout(ra RoleAgent) time.Duration {
	left, _ := e.remaining()
	if left > 0 && (ra.Timeout == 0 || left < ra.Timeout) {
		return left
	}
	return ra.Timeout
}
