// Package loop is the Plan → Do → Check → Act engine: the JSON contracts every agent speaks,
// the step runner, the verdict rules, budgets and stop rules, the exec and built-in agents,
// the process handling every agent starts through, and the progress journal. The agent CLIs
// are loop/agent's. It never runs git or touches the tracker: the application hands it a
// Workspace and a Recorder.
package loop

// Role is one of the four fixed steps of an iteration.
type Role string

// Writes says whether the role may change the workspace: Do and Act; Plan and Check only
// read it (spec 5).
func (r Role) Writes() bool { return r == RoleDo || r == RoleAct }

// The roles, in the order every iteration runs them.
const (
	RolePlan  Role = "plan"
	RoleDo    Role = "do"
	RoleCheck Role = "check"
	RoleAct   Role = "act"
)

// Roles lists the fixed workflow order.
var Roles = []Role{RolePlan, RoleDo, RoleCheck, RoleAct}

// Output statuses (spec 7.2).
const (
	StatusOK    = "ok"
	StatusStop  = "stop"
	StatusError = "error"
)

// Stop reasons (spec 5). StopNone is the value when a step did not stop.
const (
	StopNone              = "none"
	StopBudgetExceeded    = "budget_exceeded"
	StopDependencyBlocked = "dependency_blocked"
	StopVerifyMissing     = "verify_missing"
	StopReplanRequired    = "replan_required"
)

// StopReasonsAllowed is sent to every agent so it knows which stop reasons it may return.
var StopReasonsAllowed = []string{StopBudgetExceeded, StopDependencyBlocked, StopVerifyMissing, StopReplanRequired}

// Verdicts of the Check step (spec 8.3).
const (
	VerdictPass    = "PASS"
	VerdictFail    = "FAIL"
	VerdictPartial = "PARTIAL"
)

// Act decisions (spec 8.4).
const (
	DecisionClose    = "close"
	DecisionReplan   = "replan"
	DecisionRollback = "rollback"
	DecisionContinue = "continue"
)

// Input is the input.json every step receives (spec 7.1), plus the outputs of the earlier
// steps of the same iteration that the role needs (spec 8.2–8.4).
type Input struct {
	Run                RunRef    `json:"run"`
	Task               TaskInput `json:"task"`
	Step               StepRef   `json:"step"`
	Paths              Paths     `json:"paths"`
	Budgets            Budgets   `json:"budgets"`
	StopReasonsAllowed []string  `json:"stop_reasons_allowed"`
	Context            Context   `json:"context"`
	Plan               *Plan     `json:"plan,omitempty"`
	Do                 *Do       `json:"do,omitempty"`
	Check              *Check    `json:"check,omitempty"`
	// Evidence is what the orchestrator's own run of the checks produced (check step only):
	// a Check agent reads it and may add findings, but cannot overturn a failed command.
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Keys of Context.Facts the engine maintains between iterations.
const (
	// FactFailedChecks is the number of non-PASS verdicts so far in this run.
	FactFailedChecks = "failed_checks"
	// FactLastFailure is the previous iteration's failure (a Failure), fed to the next one.
	FactLastFailure = "last_failure"
	// FactLastAct is the last Act's decision (an Act: its rationale and next.notes say
	// what the next iteration should change), fed to the next Plan and Do.
	FactLastAct = "last_act"
)

// RunRef identifies the run and iteration.
type RunRef struct {
	ID        string `json:"id"`
	Iteration int    `json:"iteration"`
}

// TaskInput is the task as agents see it.
type TaskInput struct {
	ID                 string                `json:"id"`
	Title              string                `json:"title"`
	Description        string                `json:"description"`
	Type               string                `json:"type,omitempty"`
	AcceptanceCriteria []AcceptanceCriterion `json:"acceptance_criteria"`
	// VerifyCommands are the task's Ready Contract `Verify:` commands.
	VerifyCommands []string `json:"verify_commands,omitempty"`
}

// AcceptanceCriterion is a baseline AC from the task.
type AcceptanceCriterion struct {
	ID          string   `json:"id"`
	Text        string   `json:"text"`
	VerifyHints []string `json:"verify_hints"`
}

// StepRef identifies the step; Dir is absolute so agents need not know the layout.
type StepRef struct {
	Index int    `json:"index"`
	Name  Role   `json:"name"`
	Dir   string `json:"dir"`
}

// Paths tells an agent where it may work and whether it may write the workspace.
type Paths struct {
	WorkspaceDir  string `json:"workspace_dir"`
	WorkspaceMode string `json:"workspace_mode"`
	ArtifactsDir  string `json:"artifacts_dir"`
	ProgressPath  string `json:"progress_path"`
}

// Budgets are the limits of a run (spec 7.1, plus max_patch_kb from 6.2).
type Budgets struct {
	MaxIterations      int `json:"max_iterations"`
	MaxWallTimeMinutes int `json:"max_wall_time_minutes"`
	MaxFailedChecks    int `json:"max_failed_checks"`
	MaxPatchKB         int `json:"max_patch_kb"`
	// MaxCostUSD stops the run once the agents' reported cost reaches it (0: no limit).
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// MaxSameFailures stops the run (no_progress) once this many iterations in a row failed
	// exactly alike (Failure.Same); 0: never.
	MaxSameFailures int `json:"max_same_failures,omitempty"`
	// MaxRetries is how many times a step whose agent failed (it exited non-zero, timed out,
	// answered no valid output) runs again, per kind of failure, before the run stops with
	// budget_exceeded; 0: never, the run fails at once.
	MaxRetries int `json:"max_retries,omitempty"`
}

// Context carries facts from earlier iterations, notably the last failure.
type Context struct {
	Facts   map[string]any `json:"facts"`
	Links   []string       `json:"links"`
	Attempt int            `json:"attempt"`
}

// Output is the output.json of every step (spec 7.2) with the role's own section.
type Output struct {
	Status     string   `json:"status"`
	StopReason string   `json:"stop_reason"`
	Summary    Summary  `json:"summary"`
	Logs       Logs     `json:"logs"`
	Timing     Timing   `json:"timing"`
	Progress   Progress `json:"progress"`
	Plan       *Plan    `json:"plan,omitempty"`
	Do         *Do      `json:"do,omitempty"`
	Check      *Check   `json:"check,omitempty"`
	Act        *Act     `json:"act,omitempty"`
	// Usage is what the step cost, filled by the orchestrator from a CLI agent's envelope.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is the model, tokens and cost of one step, as far as the agent CLI reports them.
type Usage struct {
	Agent        string  `json:"agent"`
	Model        string  `json:"model,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	// Attempts is 2 when the first answer was invalid and a repair was asked for.
	Attempts int `json:"attempts,omitempty"`
}

// Summary is the short human summary of a step.
type Summary struct {
	Text     string   `json:"text"`
	Warnings []string `json:"warnings"`
	Errors   []string `json:"errors"`
}

// Logs points at the step's captured streams.
type Logs struct {
	StdoutPath string `json:"stdout_path"`
	StderrPath string `json:"stderr_path"`
}

// Timing records how long the step took.
type Timing struct {
	WallTimeMS int64 `json:"wall_time_ms"`
}

// Progress is the step's entry for the run journal (spec 8.5).
type Progress struct {
	Title   string            `json:"title"`
	Details []string          `json:"details"`
	Links   map[string]string `json:"links"`
}
