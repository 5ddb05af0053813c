// Package config is .norma/config.json: its types and defaults, loading it over the defaults
// with errors that name the key, and the dotted keys `git norma config` reads and sets. What a
// bad file means to a command (its exit code, the hint) is the application's to say.
package config

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// Config is .norma/config.json (spec section 6.2). Every key is documented in the README's
// configuration reference; Default holds the defaults.
type Config struct {
	// Tracker is "jsonl" (the embedded backlog in .beads/issues.jsonl), "beads" (the bd CLI),
	// or "auto" (beads when bd is usable here, else jsonl).
	Tracker string `json:"tracker"`
	// IDPrefix prefixes new task ids (<prefix>-<base36>).
	IDPrefix string `json:"id_prefix"`
	// TargetBranch is where PASSed tasks land; "": the main worktree's branch at the run's start.
	TargetBranch string    `json:"target_branch"`
	Agents       Agents    `json:"agents"`
	Budgets      Budgets   `json:"budgets"`
	Retention    Retention `json:"retention"`
	Commit       Commit    `json:"commit"`
	// Gates are project-wide checks every task must pass, added to each plan's criteria.
	Gates []loop.Gate `json:"gates"`
	// Selection focuses `next` and `loop` on one feature or epic; the flags override it.
	Selection Focus `json:"selection"`
	// MaxParallel bounds `git norma loop --parallel N`.
	MaxParallel int `json:"max_parallel"`
	// Notify is a command (argv) run with a JSON event on stdin when a run ends or needs a
	// human (stopped, blocked, landing refused).
	Notify []string `json:"notify"`
	// Notes.Push has the pre-push hook push refs/notes/norma along with the branches.
	Notes Notes `json:"notes"`
	// DeleteBranchOnLand deletes the task branch once its squash commit has landed; by default
	// it stays, with the step commits, until `git norma prune`.
	DeleteBranchOnLand bool `json:"delete_branch_on_land"`
	// RecoverPassed is what recovery does with a run that recorded a PASS and died before it
	// landed: "land" lands it from the recorded PASS (re-checked when the target moved),
	// "reopen" gives the task back to be run again.
	RecoverPassed string `json:"recover_passed"`
	// FiledTasks is what becomes of the tasks agents file (a Plan's children or missing
	// prerequisite, Do's discoveries), whose Verify lines the agent wrote: "review" keeps them
	// from selection until a person accepts them, "work" lets a run go on with them.
	FiledTasks string   `json:"filed_tasks"`
	Worktree   Worktree `json:"worktree"`
	Sandbox    Sandbox  `json:"sandbox"`
	Worker     Worker   `json:"worker"`
	// Remote is the git remote tasks land through, for workers on several machines: runs
	// fork from its target branch, and a landing is a compare-and-swap push to it, retried
	// when another worker landed first. "" lands locally only (--remote overrides it).
	Remote string `json:"remote"`
}

// Worker names this git-norma to a shared tracker (see Config.WorkerID).
type Worker struct {
	// ID is the actor of every bd write and the assignee of every claim; empty: BEADS_ACTOR,
	// else <host>/<pid>, one per process.
	ID string `json:"id"`
	// Lease is how long, with bd, a claim holds without word from its worker: a run renews it
	// every third of it, and a loop reopens a task whose worker let it run out (gitnorma/reaper.go).
	Lease Duration `json:"lease"`
}

// Sandbox is how agents and check commands are confined (loop/sandbox).
type Sandbox struct {
	// Mode is auto (confine where the kernel can), required (refuse to run unconfined) or off;
	// GIT_NORMA_SANDBOX overrides it.
	Mode string `json:"mode"`
	// AllowWrite are extra paths confined processes may write ("~" is the home directory),
	// e.g. an agent CLI's own state directory.
	AllowWrite []string `json:"allow_write"`
	// Network allows TCP bind and connect.
	Network bool `json:"network"`
}

// Worktree prepares each new run workspace and check worktree.
type Worktree struct {
	// Setup are argv commands run once in each new run workspace and check worktree, after the
	// ignored files .worktreeinclude names were copied there (e.g. ["npm", "ci"]).
	Setup [][]string `json:"setup"`
}

// The claim's lease under a shared tracker (worker.lease): its default, and the shortest
// allowed, since a run renews it every third of its length.
const (
	DefaultLease = 5 * time.Minute
	MinLease     = 3 * time.Second
)

// ConventionalTypes are the types a Plan may propose (Conventional Commits and the common
// Angular set).
var ConventionalTypes = []string{"feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert"}

// What recovery does with a PASS that did not land (Config.RecoverPassed).
const (
	RecoverLand   = "land"
	RecoverReopen = "reopen"
)

// What becomes of the tasks agents file (Config.FiledTasks).
const (
	FiledReview = "review"
	FiledWork   = "work"
)

// Agents configures the agent of each role.
type Agents struct {
	Plan  Agent `json:"plan"`
	Do    Agent `json:"do"`
	Check Agent `json:"check"`
	Act   Agent `json:"act"`
}

// Agent is one role's agent.
type Agent struct {
	// Type is builtin, exec, claude, codex, gemini or opencode.
	Type string `json:"type"`
	// Cmd is the exec agent's argv (never a shell string).
	Cmd []string `json:"cmd,omitempty"`
	// Timeout bounds one step of this role, e.g. "90s" or "10m".
	Timeout Duration `json:"timeout,omitempty"`
	// Model selects the model of a CLI agent.
	Model string `json:"model,omitempty"`
	// Path is the CLI agent's binary (a name on PATH or a path); empty means the type's name.
	Path string `json:"path,omitempty"`
	// ExtraArgs are added to the CLI agent's argv (checked against the role's permissions).
	ExtraArgs []string `json:"extra_args,omitempty"`
	// AllowUnsandboxed permits flags that switch off the CLI's own permission checks.
	AllowUnsandboxed bool `json:"allow_unsandboxed,omitempty"`
}

// Budgets bound a run; 0 means no limit.
type Budgets struct {
	MaxIterations      int `json:"max_iterations"`
	MaxWallTimeMinutes int `json:"max_wall_time_minutes"`
	MaxFailedChecks    int `json:"max_failed_checks"`
	MaxPatchKB         int `json:"max_patch_kb"`
	// MaxCostUSD stops a run once its agents' reported cost reaches it (0: no limit).
	MaxCostUSD float64 `json:"max_cost_usd"`
	// MaxSameFailures stops a run (no_progress) once this many iterations in a row failed
	// exactly alike (0: never).
	MaxSameFailures int `json:"max_same_failures"`
	// MaxRetries runs a step whose agent failed again, up to this many times per kind of
	// failure, before the run stops (0: the run fails at once).
	MaxRetries int `json:"max_retries"`
}

// Notes configures sharing the journal.
type Notes struct {
	Push bool `json:"push"`
}

// Focus is the configured scope of task selection.
type Focus struct {
	ActiveFeature string `json:"active_feature_id"`
	ActiveEpic    string `json:"active_epic_id"`
}

// Retention is how many runs `git norma prune` keeps.
type Retention struct {
	KeepLast int `json:"keep_last"`
	KeepDays int `json:"keep_days"`
}

// Commit configures the landing commit.
type Commit struct {
	// TypeMap maps a task's issue type to a Conventional Commit type.
	TypeMap map[string]string `json:"type_map"`
	// DefaultType is used when neither the plan nor the map gives a type.
	DefaultType string `json:"default_type"`
	// CoAuthor, "Name <email>", is added as a Co-authored-by trailer crediting the agent.
	CoAuthor string `json:"co_author"`
}

// Agent types.
const (
	AgentBuiltin  = "builtin"
	AgentExec     = "exec"
	AgentClaude   = "claude"
	AgentCodex    = "codex"
	AgentGemini   = "gemini"
	AgentOpencode = "opencode"
)

var gateNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

var coAuthorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^<>\n]+ <[^<>\s]+@[^<>\s]+>$`) })

var agentTypes = []string{AgentBuiltin, AgentExec, AgentClaude, AgentCodex, AgentGemini, AgentOpencode}

// Default is the configuration `git norma init` writes and a missing key falls back to.
func Default() Config {
	builtin := func(timeout time.Duration) Agent {
		return Agent{Type: AgentBuiltin, Timeout: Duration(timeout)}
	}
	return Config{
		Tracker:  "auto",
		IDPrefix: "norma",
		Agents: Agents{
			Plan:  builtin(time.Minute),
			Do:    Agent{Type: AgentExec, Cmd: []string{}, Timeout: Duration(30 * time.Minute)},
			Check: builtin(10 * time.Minute),
			Act:   builtin(time.Minute),
		},
		Budgets:     Budgets{MaxIterations: 5, MaxWallTimeMinutes: 60, MaxFailedChecks: 5, MaxPatchKB: 1024, MaxSameFailures: 2},
		Retention:   Retention{KeepLast: 50, KeepDays: 30},
		Gates:       []loop.Gate{},
		Worktree:    Worktree{Setup: [][]string{}},
		MaxParallel: 1,
		Worker:      Worker{Lease: Duration(DefaultLease)},
		Sandbox:     Sandbox{Mode: string(sandbox.ModeAuto), AllowWrite: []string{}, Network: true},
		Commit: Commit{
			TypeMap:     map[string]string{"bug": "fix", "feature": "feat", "chore": "chore", "task": "feat"},
			DefaultType: "feat",
		},
		RecoverPassed: RecoverLand,
		FiledTasks:    FiledReview,
	}
}

// RoleAgent is a role's name and its agent.
type RoleAgent struct {
	Role  string
	Agent Agent
}

// ByRole lists the agents in the loop's order: plan, do, check, act.
func (a Agents) ByRole() []RoleAgent {
	return []RoleAgent{{"plan", a.Plan}, {"do", a.Do}, {"check", a.Check}, {"act", a.Act}}
}

// WorkerID is who this git-norma is to a shared tracker: worker.id, else BEADS_ACTOR, else
// <host>/<pid> — one per process, never git's user.name, which every CI runner of a project
// shares (and bd accepts a claim again from the actor that holds it). It starts no process:
// every command with bd asks for it.
func (c Config) WorkerID() string {
	host, _ := os.Hostname()
	return cmp.Or(c.Worker.ID, os.Getenv("BEADS_ACTOR"), fmt.Sprintf("%s/%d", host, os.Getpid()))
}

// Duration is a time.Duration written as a Go duration string ("90s", "10m").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string; checkShape has already rejected bad ones with the key.
// null keeps the value already there (the default).
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}
