package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/agent"
	"github.com/git-norma/git-norma/worktree"
)

// preflight is everything a run checks before it creates a single file, branch or row.
type preflight struct {
	task   tracker.Task
	target string
	agents map[loop.Role]loop.RoleAgent
	// sandbox is how the run's agents will be confined (sandbox.go).
	sandbox confinement
}

// prepare validates the id, the repository, the task, the target (target, or targetBranch's
// when "") and the agents; live hears what it waits for.
func (a *App) prepare(ctx context.Context, taskID, target string, live loop.LiveFunc) (*preflight, tracker.Tracker, error) {
	if err := a.ValidateTaskID(taskID); err != nil {
		return nil, nil, err
	}
	if err := a.Repo.Git.CheckVersion(ctx); err != nil {
		return nil, nil, withKind(ErrEnvironment, err)
	}
	if target == "" {
		var err error
		if target, err = a.targetBranch(ctx); err != nil {
			return nil, nil, err
		}
	}
	if err := a.checkRemote(ctx); err != nil {
		return nil, nil, err
	}
	if err := a.syncTargetLocked(ctx, target, live, taskID); err != nil {
		// Commits of the user's the remote lacks stay until the user acts: no run can start.
		// A remote that did not answer, or a checkout busy for a moment, fail this run only: a
		// worker tries again at its next look.
		var r *landRefusal
		if !errors.As(err, &r) {
			return nil, nil, err
		}
		if errors.Is(r.reason, worktree.ErrTargetAhead) {
			return nil, nil, &Error{Kind: ErrEnvironment, Err: r.reason, Hint: r.hint}
		}
		return nil, nil, &Error{Err: tryLater{r.reason}, Hint: r.hint}
	}
	if _, err := a.Repo.Git.Var(ctx, "GIT_COMMITTER_IDENT"); err != nil {
		return nil, nil, fatalf(`git config --global user.name "Your Name" && git config --global user.email you@example.com`,
			"git has no identity to commit with")
	}
	agents, err := buildAgents(a.Repo.Root, a.Config.Agents)
	if err != nil {
		return nil, nil, err
	}
	conf, err := a.confiner().confinement()
	if err != nil {
		return nil, nil, err
	}
	tr, err := a.Tracker()
	if err != nil {
		return nil, nil, err
	}
	task, err := tr.Get(ctx, taskID)
	if errors.Is(err, tracker.ErrNotFound) {
		return nil, nil, failf("list tasks with: git norma task list", "no task %s in the backlog", taskID)
	}
	if err != nil {
		return nil, nil, err
	}
	if task.Status == tracker.StatusBlocked {
		return nil, nil, failf("see why with: git norma task show "+taskID+"; once fixed: git norma task unblock "+taskID,
			"task %s is blocked (status blocked); only open tasks can be run", taskID)
	}
	if task.Status != tracker.StatusOpen && task.Status != tracker.StatusInProgress {
		return nil, nil, failf("", "task %s is %s; only open tasks can be run", taskID, task.Status)
	}
	if slices.Contains(task.Labels, LabelProposed) {
		return nil, nil, failf("read what it asks and how it is checked (git norma task show "+taskID+"), then accept it: git norma task accept "+taskID,
			"task %s was filed by an agent and waits for your review: its Verify lines are the agent's", taskID)
	}
	return &preflight{task: task, target: target, agents: agents, sandbox: conf}, tr, nil
}

// tryLater is why a run could not start for the moment (the remote did not answer, the
// target's checkout was busy): a worker loop tries the task again at its next look.
type tryLater struct{ error }

func (e tryLater) Unwrap() error { return e.error }

// targetBranch is the configured target, or the branch checked out in the main worktree.
func (a *App) targetBranch(ctx context.Context) (string, error) {
	target := a.Config.TargetBranch
	if target == "" {
		out, err := a.Repo.Git.CurrentBranch(ctx)
		if err != nil || out == "" {
			return "", fatalf(`check out a branch in `+a.Repo.Root+`, or set "target_branch" in .norma/config.json`,
				"the main worktree has a detached HEAD, so there is no target branch to land on")
		}
		target = out
	}
	if strings.HasPrefix(target, worktree.BranchPrefix) {
		// A task's branch is work waiting to be verified, never a place to land other work.
		hint := `switch the main worktree back to your own branch (git switch main, say), or set "target_branch" in .norma/config.json`
		if a.Config.TargetBranch != "" {
			hint = `set "target_branch" in .norma/config.json to the branch tasks land on`
		}
		return "", fatalf(hint, "the target branch would be %s, a git-norma task branch: tasks do not land on one another", target)
	}
	if err := a.Repo.Git.ValidBranchName(ctx, target); err != nil {
		return "", fatalf("fix target_branch in .norma/config.json", "target_branch %q is not a valid branch name", target)
	}
	if _, err := a.Repo.Git.ResolveCommit(ctx, "refs/heads/"+target); err != nil {
		// Only the branch HEAD is on can be unborn; any other branch that does not resolve is
		// simply not there (a typo in target_branch, or deleted since).
		if head, _ := a.Repo.Git.SymbolicRef(ctx, "HEAD"); head == "refs/heads/"+target {
			return "", fatalf("make a first commit: git commit --allow-empty -m 'initial commit'",
				"target branch %s has no commits yet", target)
		}
		return "", fatalf(fmt.Sprintf(`create it (git branch %s <start-commit>), or set "target_branch" in .norma/config.json to an existing branch`, target),
			"target branch %s does not exist", target)
	}
	return target, nil
}

// buildAgents turns the agents' config into an agent per role, refusing what cannot run.
func buildAgents(root string, cfg config.Agents) (map[loop.Role]loop.RoleAgent, error) {
	agents := map[loop.Role]loop.RoleAgent{}
	for _, ra := range cfg.ByRole() {
		role := loop.Role(ra.Role)
		agent, name, err := agentFor(root, role, ra.Agent)
		if err != nil {
			return nil, err
		}
		agents[role] = loop.RoleAgent{Agent: agent, Timeout: time.Duration(ra.Agent.Timeout), Name: name}
	}
	return agents, nil
}

// agentFor is the agent c configures for role, and its name.
func agentFor(root string, role loop.Role, c config.Agent) (loop.Agent, string, error) {
	switch c.Type {
	case config.AgentBuiltin:
		builtin := map[loop.Role]loop.Agent{loop.RolePlan: loop.BuiltinPlan{}, loop.RoleCheck: loop.BuiltinCheck{}, loop.RoleAct: loop.BuiltinAct{}}
		if agent, ok := builtin[role]; ok {
			return agent, "builtin", nil
		}
	case config.AgentExec:
		argv, err := resolveArgv(root, role, c.Cmd)
		if err != nil {
			return nil, "", err
		}
		return loop.ExecAgent{Argv: argv}, "exec " + strings.Join(c.Cmd, " "), nil
	case config.AgentClaude, config.AgentCodex, config.AgentGemini, config.AgentOpencode:
		return cliAgent(root, role, c)
	}
	return nil, "", fatalf("fix agents."+string(role)+".type in .norma/config.json",
		"agents.%s.type %q cannot play the %s role", role, c.Type, role)
}

// npmPackages is where each agent CLI comes from, for install hints.
var npmPackages = map[string]string{
	config.AgentClaude: "@anthropic-ai/claude-code", config.AgentCodex: "@openai/codex",
	config.AgentGemini: "@google/gemini-cli", config.AgentOpencode: "opencode-ai",
}

// cliAgent builds a CLI agent, refusing a missing binary or a flag combination that would give
// the role more than it may have.
func cliAgent(root string, role loop.Role, c config.Agent) (loop.Agent, string, error) {
	bin := repoProgram(root, cmp.Or(c.Path, c.Type))
	if _, err := exec.LookPath(bin); err != nil {
		return nil, "", fatalf(fmt.Sprintf("install it (npm install -g %s), or set agents.%s.path to where it is", npmPackages[c.Type], role),
			"the %s agent %s is not installed or not on PATH", role, c.Type)
	}
	cli, err := agent.NewCLIAgent(role, agent.CLIOptions{Kind: c.Type, Path: bin, Model: c.Model,
		ExtraArgs: c.ExtraArgs, AllowUnsandboxed: c.AllowUnsandboxed})
	if err != nil {
		return nil, "", fatalf("fix agents."+string(role)+" in .norma/config.json", "agents.%s: %v", role, err)
	}
	return cli, fmt.Sprint(cli), nil
}

// resolveArgv finds an exec agent's program (see repoProgram).
func resolveArgv(root string, role loop.Role, cmd []string) ([]string, error) {
	if len(cmd) == 0 || strings.TrimSpace(cmd[0]) == "" {
		return nil, fatalf(fmt.Sprintf(`set it in .norma/config.json, e.g. "%s": {"type": "exec", "cmd": ["./my-agent"]}`, role),
			"agents.%s.cmd is empty: git-norma needs a program to play the %s role", role, role)
	}
	argv := append([]string(nil), cmd...)
	prog := repoProgram(root, argv[0])
	if strings.Contains(prog, "/") {
		if _, err := os.Stat(prog); err != nil {
			return nil, fatalf("fix agents."+string(role)+".cmd in .norma/config.json", "the %s agent %s does not exist", role, prog)
		}
	} else if _, err := exec.LookPath(prog); err != nil {
		return nil, fatalf("install it or fix agents."+string(role)+".cmd in .norma/config.json", "the %s agent %q is not on PATH", role, prog)
	}
	argv[0] = prog
	return argv, nil
}

// repoProgram is a program the config names: a path with a slash is relative to the
// repository root (so config.json works from any directory), a bare name is looked up on PATH.
func repoProgram(root, prog string) string {
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		return filepath.Join(root, prog)
	}
	return prog
}
