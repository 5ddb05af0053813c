// Package agent holds the agent CLIs git-norma drives headless — claude, codex, gemini and
// opencode — as loop.Agents: each CLI is data (cliBackend: argv, permission rules, output
// envelope), and all four share one way of starting, repairing and reading an answer
// (run.go), through loop's process handling, confined and contained like every agent.
package agent

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/loop"
)

// CLIOptions configure one role's agent CLI.
type CLIOptions struct {
	Kind      string // "claude" | "codex" | "gemini" | "opencode"
	Path      string // binary (name on PATH or path); "" = Kind
	Model     string
	ExtraArgs []string
	// AllowUnsandboxed permits flags that drop the CLI's own permission checks (claude
	// bypassPermissions / --dangerously-skip-permissions, codex
	// --dangerously-bypass-approvals-and-sandbox / -s danger-full-access, gemini yolo for
	// read-only roles, opencode --auto ...), and write-enabling flags for plan and check.
	AllowUnsandboxed bool
	// Env is added to the environment the CLI starts from (Request.Env); no GIT_ variable.
	Env []string
}

// CLIKinds lists the supported kinds.
var CLIKinds = []string{"claude", "codex", "gemini", "opencode"}

// cliBackend is what differs between the four CLIs: argv, permission vetting, environment
// and the output envelope (agents/CONTRACT.md).
type cliBackend struct {
	// flags is the CLI's option table, from its captured --help (parseFlagTable).
	flags string
	// rules judge extra options by name: those git-norma sets itself or that break the
	// one-shot protocol, and those that grant a fixed class; vet judges the others, by their
	// values and the role.
	rules map[string]argRule
	vet   func(role loop.Role, a cliArg) argRule
	// vetEnv judges one extra environment entry for role (its class only); nil accepts
	// every entry.
	vetEnv func(role loop.Role, name, value string) argRule
	// argv is everything after the binary: git-norma's flags around the extra ones.
	argv func(role loop.Role, inv cliInvocation) []string
	// env is what the backend adds to the inherited environment; nil adds nothing.
	env func(role loop.Role) []string
	// parse reads one run's envelope into the answer, or the CLI's failure.
	parse func(e cliEnvelope) (cliAnswer, error)
	// install is the command that installs the CLI, for a binary that is not found.
	install string
	// answerHint tells the model how its answer is taken.
	answerHint string
}

// cliInvocation is one run of a CLI.
type cliInvocation struct {
	model   string
	workDir string
	// schema is the output schema, compact; schemaFile and lastMessage are files in the
	// step directory (codex).
	schema      string
	schemaFile  string
	lastMessage string
	extra       []string
	// replaced lists the slots of git-norma's defaults that extra options took over.
	replaced map[string]bool
}

// unless is args, or nothing when an extra option took over slot.
func (inv cliInvocation) unless(slot string, args ...string) []string {
	if inv.replaced[slot] {
		return nil
	}
	return args
}

// modelArgs sets the model with flag, when the agent has one.
func (inv cliInvocation) modelArgs(flag string) []string {
	if inv.model == "" {
		return nil
	}
	return []string{flag, inv.model}
}

// byRole is read for the read-only roles (plan, check), write for do and act.
func byRole(role loop.Role, read, write string) string {
	if role.Writes() {
		return write
	}
	return read
}

// cliAnswer is what a run produced: the answer text, or (claude) the object the CLI
// validated, plus the usage the envelope reported.
type cliAnswer struct {
	text       string
	structured []byte
	usage      loop.Usage
	warnings   []string
}

var backends = map[string]cliBackend{
	"claude":   claudeCLI,
	"codex":    codexCLI,
	"gemini":   geminiCLI,
	"opencode": opencodeCLI,
}

// cliAgent runs one role through an agent CLI.
type cliAgent struct {
	role     loop.Role
	o        CLIOptions
	b        cliBackend
	extra    []string
	dirs     []string
	replaced map[string]bool
	schema   []byte
}

// NewCLIAgent validates the options for the role and returns the Agent. It refuses a
// CLI/flag combination that grants the role more than the spec allows: plan and check are
// read-only, do and act may write only in the workspace.
func NewCLIAgent(role loop.Role, o CLIOptions) (loop.Agent, error) {
	return newCLIAgent(role, o, os.Geteuid())
}

// newCLIAgent is NewCLIAgent for a git-norma running as user euid (0: root).
func newCLIAgent(role loop.Role, o CLIOptions, euid int) (loop.Agent, error) {
	if !slices.Contains(loop.Roles, role) {
		return nil, fmt.Errorf("unknown role %q (want one of %v)", role, loop.Roles)
	}
	b, ok := backends[o.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown agent CLI %q for the %s role: use one of %s, or type exec with a cmd", o.Kind, role, strings.Join(CLIKinds, ", "))
	}
	a := &cliAgent{role: role, o: o, b: b, replaced: map[string]bool{}}
	if a.o.Path == "" {
		a.o.Path = o.Kind
	}
	if err := a.vetArgs(); err != nil {
		return nil, err
	}
	if err := a.vetEnv(); err != nil {
		return nil, err
	}
	if err := a.vetRoot(euid); err != nil {
		return nil, err
	}
	schema, err := loop.Schema(role, "output")
	if err != nil {
		return nil, err
	}
	a.schema = schema
	return a, nil
}

func (a *cliAgent) vetArgs() error {
	args, err := parseExtraArgs(a.o.Kind, parseFlagTable(a.b.flags), a.o.ExtraArgs)
	if err != nil {
		return err
	}
	for _, arg := range args {
		r, ok := a.b.rules[arg.flag.name]
		if !ok {
			r, ok = commonRules[arg.flag.name]
		}
		if !ok {
			r = a.b.vet(a.role, arg)
		}
		if err := vetRule(a.o.Kind, a.role, arg, r, a.o.AllowUnsandboxed); err != nil {
			return err
		}
		if r.slot != "" {
			a.replaced[r.slot] = true
		}
		a.dirs = append(a.dirs, r.dirs...)
		a.extra = append(a.extra, arg.raw...)
	}
	return nil
}

func (a *cliAgent) vetEnv() error {
	for _, kv := range a.o.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("%s: env entry %q is not NAME=value", a.o.Kind, kv)
		}
		if strings.HasPrefix(name, "GIT_") {
			return fmt.Errorf("%s: env %s would point the agent's git at another repository, or change what it does; git-norma runs every agent in the run's workspace, remove it", a.o.Kind, name)
		}
		if a.b.vetEnv == nil {
			continue
		}
		r := a.b.vetEnv(a.role, name, value)
		arg := cliArg{flag: &flagSpec{name: name}, raw: []string{"env " + name}}
		if err := vetRule(a.o.Kind, a.role, arg, r, a.o.AllowUnsandboxed); err != nil {
			return err
		}
	}
	return nil
}

// vetRoot refuses, before any run, what claude would refuse at every run: a permission
// bypass as root (euid 0) without IS_SANDBOX=1.
func (a *cliAgent) vetRoot(euid int) error {
	if a.o.Kind != "claude" || !a.replaced[slotBypass] || euid != 0 {
		return nil
	}
	if v, _ := loop.LookupEnv(append(os.Environ(), a.o.Env...), "IS_SANDBOX"); v == "1" {
		return nil
	}
	return fmt.Errorf("claude: --dangerously-skip-permissions / --permission-mode bypassPermissions cannot run as root: claude exits 1 with \"cannot be used with root/sudo privileges\" unless IS_SANDBOX=1 is in its environment; if this host is a sandbox, add \"IS_SANDBOX=1\" to the %s agent's env, otherwise run git-norma as a normal user", a.role)
}

// environ is the CLI's environment: ours without git's repository variables, the
// backend's settings, the step's NORMA_* variables, then the configured entries (the last
// value of a name wins).
func (a *cliAgent) environ(req loop.Request) []string {
	env := loop.BaseEnv(req.Env)
	if a.b.env != nil {
		env = append(env, a.b.env(a.role)...)
	}
	env = append(env, loop.StepEnv(req)...)
	return append(env, a.o.Env...)
}

// String describes the agent for logs.
func (a *cliAgent) String() string {
	s := a.o.Kind
	if a.o.Model != "" {
		s += " " + a.o.Model
	}
	return s
}

// Run implements Agent: one run of the CLI and, if its answer is not a valid output, one
// repair run that quotes the validation error.
func (a *cliAgent) Run(ctx context.Context, req loop.Request) (loop.Output, error) {
	if err := dirsInside(a.o.Kind, req.WorkDir, a.dirs); err != nil {
		return loop.Output{}, err
	}
	data, err := a.promptData(req)
	if err != nil {
		return loop.Output{}, err
	}
	prompt, err := render("prompt", data)
	if err != nil {
		return loop.Output{}, err
	}
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = time.Now().Add(req.Timeout)
	}
	usage := &loop.Usage{Agent: a.o.Kind, Model: a.o.Model, Attempts: 1}
	out, rejected, err := a.attempt(ctx, req, "prompt.txt", prompt, deadline, usage)
	if err == nil || !repairable(err) || ctx.Err() != nil || !deadline.IsZero() && time.Until(deadline) <= 0 {
		return withUsage(out, usage), err
	}
	fmt.Fprintf(req.Stderr, "git-norma: the %s answer was rejected (%v); asking once more for the JSON answer only\n", a.o.Kind, err)
	usage.Attempts = 2
	prompt, perr := renderRepair(data, err, rejected)
	if perr != nil {
		return loop.Output{}, perr
	}
	out, _, err = a.attempt(ctx, req, "prompt-repair.txt", prompt, deadline, usage)
	if err != nil && ctx.Err() == nil {
		err = afterRepair(err)
	}
	return withUsage(out, usage), err
}

func withUsage(out loop.Output, u *loop.Usage) loop.Output {
	out.Usage = u
	return out
}
