package loop

// Plan is the Plan role's section (spec 8.1).
type Plan struct {
	TaskID             string          `json:"task_id"`
	Goal               string          `json:"goal"`
	Constraints        []string        `json:"constraints"`
	AcceptanceCriteria PlanCriteria    `json:"acceptance_criteria"`
	WorkPlan           WorkPlan        `json:"work_plan"`
	Commit             *CommitProposal `json:"commit,omitempty"`
	// Outcome is READY (the default: work on this task), DECOMPOSE (create Children and go on
	// with one of them) or BLOCKED (create the Prerequisite and go on with it).
	Outcome string `json:"outcome,omitempty"`
	// NextTaskID names the task to go on with: a child's or the prerequisite's key.
	NextTaskID   string     `json:"next_task_id,omitempty"`
	Children     []NewIssue `json:"children,omitempty"`
	Prerequisite *NewIssue  `json:"prerequisite,omitempty"`
}

// Plan outcomes (spec "1) PLAN").
const (
	OutcomeReady     = "READY"
	OutcomeDecompose = "DECOMPOSE"
	OutcomeBlocked   = "BLOCKED"
)

// NewIssue is an issue Plan asks the orchestrator to create (agents never touch the tracker).
type NewIssue struct {
	// Key names the issue inside this output (next_task_id, blocks); the tracker assigns ids.
	Key         string `json:"key"`
	Title       string `json:"title"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Acceptance  string `json:"acceptance,omitempty"`
	Priority    *int   `json:"priority,omitempty"`
	// Blocks lists keys of sibling new issues that must wait for this one.
	Blocks []string `json:"blocks,omitempty"`
}

// CommitProposal is Plan's optional proposal for the landing commit's Conventional Commit
// header; the orchestrator uses it only when the type is valid.
type CommitProposal struct {
	Type     string `json:"type"`
	Scope    string `json:"scope,omitempty"`
	Breaking bool   `json:"breaking,omitempty"`
}

// PlanCriteria holds the baseline ACs and the effective ones Check evaluates.
type PlanCriteria struct {
	Baseline  []AcceptanceCriterion `json:"baseline"`
	Effective []EffectiveCriterion  `json:"effective"`
}

// EffectiveCriterion is an AC with the executable checks that prove it.
type EffectiveCriterion struct {
	ID      string      `json:"id"`
	Origin  string      `json:"origin"`
	Refines []string    `json:"refines,omitempty"`
	Text    string      `json:"text"`
	Checks  []CheckSpec `json:"checks"`
	Reason  string      `json:"reason,omitempty"`
}

// CheckSpec is one command that verifies an AC.
type CheckSpec struct {
	ID              string `json:"id"`
	Cmd             string `json:"cmd"`
	ExpectExitCodes []int  `json:"expect_exit_codes"`
}

// WorkPlan is the iteration plan.
type WorkPlan struct {
	TimeboxMinutes int         `json:"timebox_minutes"`
	DoSteps        []DoStep    `json:"do_steps"`
	CheckSteps     []CheckStep `json:"check_steps"`
	StopTriggers   []string    `json:"stop_triggers"`
}

// DoStep is one planned piece of Do work.
type DoStep struct {
	ID           string       `json:"id"`
	Text         string       `json:"text"`
	Commands     []CommandRef `json:"commands"`
	TargetsACIDs []string     `json:"targets_ac_ids"`
}

// CommandRef is a planned command (Plan) or an executed one (Do, with ExitCode).
type CommandRef struct {
	ID              string `json:"id"`
	Cmd             string `json:"cmd"`
	ExpectExitCodes []int  `json:"expect_exit_codes,omitempty"`
	ExitCode        *int   `json:"exit_code,omitempty"`
}

// CheckStep is one planned verification step.
type CheckStep struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Mode string `json:"mode"`
}

// Do is the Do role's section (spec 8.2).
type Do struct {
	Execution Execution `json:"execution"`
	Blockers  []Blocker `json:"blockers"`
	// Discovered is work found along the way; the orchestrator files it (under the same parent,
	// linked discovered-from this task). It never widens the current iteration.
	Discovered []Discovery `json:"discovered,omitempty"`
}

// Discovery is one piece of work Do found but must not do now.
type Discovery struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Kind is the issue type to file it as (task, bug, chore, ...; default task).
	Kind string `json:"kind,omitempty"`
}

// Execution records what Do actually did.
type Execution struct {
	ExecutedStepIDs []string     `json:"executed_step_ids"`
	SkippedStepIDs  []string     `json:"skipped_step_ids"`
	Commands        []CommandRef `json:"commands"`
}

// Blocker is something that stopped or surprised Do.
type Blocker struct {
	Kind                string `json:"kind"`
	Text                string `json:"text"`
	SuggestedStopReason string `json:"suggested_stop_reason"`
}

// Check is the Check role's section (spec 8.3), plus the evidence the orchestrator gathered.
type Check struct {
	PlanMatch         PlanMatch          `json:"plan_match"`
	AcceptanceResults []AcceptanceResult `json:"acceptance_results"`
	Verdict           Verdict            `json:"verdict"`
	ProcessNotes      []ProcessNote      `json:"process_notes"`
	Evidence          []Evidence         `json:"evidence,omitempty"`
	// Tree is the id of the tree the evidence's commands ran on (the commit Do produced,
	// checked out in the check worktree); filled by the orchestrator.
	Tree string `json:"tree,omitempty"`
}

// PlanMatch compares planned and executed ids.
type PlanMatch struct {
	DoSteps  IDMatch `json:"do_steps"`
	Commands IDMatch `json:"commands"`
}

// IDMatch is one planned-vs-executed comparison.
type IDMatch struct {
	PlannedIDs    []string `json:"planned_ids"`
	ExecutedIDs   []string `json:"executed_ids"`
	MissingIDs    []string `json:"missing_ids"`
	UnexpectedIDs []string `json:"unexpected_ids"`
}

// AcceptanceResult is the outcome of one effective AC.
type AcceptanceResult struct {
	ACID   string `json:"ac_id"`
	Result string `json:"result"`
	Notes  string `json:"notes"`
	LogRef string `json:"log_ref"`
}

// Verdict is Check's conclusion.
type Verdict struct {
	Status         string       `json:"status"`
	Recommendation string       `json:"recommendation"`
	Basis          VerdictBasis `json:"basis"`
}

// VerdictBasis says what the verdict rests on.
type VerdictBasis struct {
	PlanMatch           string `json:"plan_match"`
	AllAcceptancePassed bool   `json:"all_acceptance_passed"`
}

// ProcessNote flags a process problem such as a missing verification.
type ProcessNote struct {
	Kind                string `json:"kind"`
	Severity            string `json:"severity"`
	Text                string `json:"text"`
	SuggestedStopReason string `json:"suggested_stop_reason"`
}

// Evidence is what one check command did when the orchestrator ran it.
type Evidence struct {
	CheckID    string `json:"check_id"`
	ACID       string `json:"ac_id"`
	Cmd        string `json:"cmd"`
	ExitCode   int    `json:"exit_code"`
	Passed     bool   `json:"passed"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	OutputTail string `json:"output_tail"`
	LogRef     string `json:"log_ref"`
}

// Act is the Act role's section (spec 8.4).
type Act struct {
	Decision  string  `json:"decision"`
	Rationale string  `json:"rationale"`
	Next      ActNext `json:"next"`
}

// ActNext says what the next iteration should change.
type ActNext struct {
	Recommended bool   `json:"recommended"`
	Notes       string `json:"notes"`
}
