package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stepRun is one step in progress: its files and what the agent answered.
type stepRun struct {
	role    Role
	index   int
	dir     string
	started time.Time
	input   Input
	snap    Snapshot
	stdout  *os.File
	stderr  *os.File
	out     Output
	commit  string
	// tree is the tree id the Check step's commands ran on.
	tree    string
	events  []Event
	skipped bool
}

// step runs one role end to end: files, agent, validation, workspace, commit point, journal.
// It returns a non-nil *Result when the run ends with this step.
func (e *engine) step(ctx context.Context, role Role) (Output, *Result, error) {
	if _, ok := e.remaining(); !ok {
		return Output{}, stopped(StopBudgetExceeded, "max_wall_time_minutes (%d) used up before %s", e.o.Budgets.MaxWallTimeMinutes, role), nil
	}
	s, err := e.newStep(role)
	if err != nil {
		return Output{}, nil, err
	}
	e.o.Live.report(Live{Kind: StepStarted, TaskID: e.o.Task.ID, Index: s.index, Role: role, LogDir: filepath.Join(s.dir, "logs")})
	sb := &stepSandbox{cfg: e.o.Sandbox, stepDir: s.dir, private: e.private, launcher: e.launcher}
	defer sb.close()
	agentErr, err := e.execute(withStepSandbox(ctx, sb), s)
	agentErr = sb.putBackWatched(ctx, "the "+string(role)+" step", agentErr)
	s.stdout.Close()
	s.stderr.Close()
	s.events = append(s.events, sb.events(s.stdout.Name(), s.stderr.Name())...)
	if err != nil {
		return Output{}, nil, err
	}
	end := e.conclude(ctx, s, agentErr)
	if err := e.record(ctx, s); err != nil {
		return Output{}, nil, err
	}
	if end == nil {
		end = e.chargeCost(s.out.Usage)
	}
	return s.out, end, nil
}

// StepDirName is the three-digit step directory name, continuing across iterations.
func StepDirName(index int, role Role) string {
	return fmt.Sprintf("%03d-%s", index, role)
}

// newStep makes the next step's directory and opens its logs.
func (e *engine) newStep(role Role) (*stepRun, error) {
	e.index++
	s := &stepRun{role: role, index: e.index, started: e.o.Now()}
	s.dir = filepath.Join(e.o.RunDir, "steps", StepDirName(s.index, role))
	return s, s.open()
}

func (s *stepRun) open() error {
	if err := os.MkdirAll(filepath.Join(s.dir, "logs"), 0o700); err != nil {
		return fmt.Errorf("create step dir: %w", err)
	}
	var err error
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND
	if s.stdout, err = os.OpenFile(filepath.Join(s.dir, "logs", "stdout.txt"), flags, 0o600); err != nil {
		return err
	}
	if s.stderr, err = os.OpenFile(filepath.Join(s.dir, "logs", "stderr.txt"), flags, 0o600); err != nil {
		s.stdout.Close()
		return err
	}
	return nil
}

// execute prepares the input, runs the agent and settles the workspace. The first return is
// the agent's failure (a step error); the second is an orchestrator failure.
func (e *engine) execute(ctx context.Context, s *stepRun) (error, error) {
	ra := e.o.Agents[s.role]
	_, isPure := ra.Agent.(pure)
	if _, builtin := ra.Agent.(BuiltinCheck); builtin && e.o.Sandbox.Shields {
		// Its commands run confined in the check worktree: the kernel keeps them out of the
		// workspace, so there is nothing to snapshot or settle there.
		isPure = true
	}
	if err := e.snapshot(ctx, s, isPure); err != nil {
		return nil, err
	}
	s.input = e.input(s)
	timeout := e.stepTimeout(ra)
	if s.role == RoleCheck && e.plan != nil {
		ref := filepath.ToSlash(filepath.Join("steps", StepDirName(s.index, s.role), "logs", "stdout.txt"))
		// The evidence comes from the commit Do produced, checked out where no agent runs.
		var bringErr error
		bring := func(fresh bool) (CheckTree, error) {
			ct, err := e.o.Workspace.CheckTree(ctx, s.snap.Head, fresh)
			bringErr = err
			return ct, err
		}
		run := func(ctx context.Context, ct CheckTree) ([]Evidence, error) {
			return RunChecks(ctx, Checks{Dir: ct.Dir, Log: s.stdout, LogRef: ref, Timeout: timeout, Env: e.o.Env, Checkout: ct.Checkout}, e.plan.AcceptanceCriteria.Effective)
		}
		ct, evidence, confirmed, err := VerifyTree(checkScope(ctx), bring, run)
		if err != nil && !isPure {
			// The check worktree's setup and the commands ran the agent's code: what they wrote
			// outside the places they may write is caught before the step ends, as after an agent.
			if outside, oerr := e.o.Workspace.OutsideChanges(context.WithoutCancel(ctx), s.snap); oerr != nil {
				return nil, oerr
			} else if len(outside) > 0 {
				return protocolErrorf(ErrKindGuard, "the checks wrote outside the places they may write: %s", strings.Join(outside, ", ")), nil
			}
		}
		if bringErr != nil {
			return runErr(ctx, fmt.Errorf("prepare the check worktree: %w", err))
		}
		if err != nil {
			return runErr(ctx, err)
		}
		if confirmed {
			s.events = append(s.events, Event{Type: EventCheckConfirmed,
				Message: "the checks passed with what earlier checks left (in the check worktree, or cached); run again in a fresh one with empty caches, " + passedOrNot(evidence)})
		}
		s.tree, s.input.Evidence = ct.Tree, evidence
	}
	inputPath := filepath.Join(s.dir, "input.json")
	if err := writeJSON(inputPath, s.input); err != nil {
		return nil, err
	}
	out, agentErr := ra.Agent.Run(ctx, Request{
		Input: s.input, InputPath: inputPath, StepDir: s.dir, WorkDir: e.o.Workspace.Dir(),
		Stdout: s.stdout, Stderr: s.stderr, StdoutPath: s.stdout.Name(), Timeout: timeout, Env: e.o.Env,
	})
	if agentErr == nil {
		agentErr = ValidateOutput(s.role, e.o.Task.ID, &out)
	}
	s.out = out
	if !isPure {
		// Whatever became of the agent — done, failed, timed out, interrupted — what it wrote
		// outside the places it may write is caught and undone before anything else.
		if outside, err := e.o.Workspace.OutsideChanges(context.WithoutCancel(ctx), s.snap); err != nil {
			return nil, err
		} else if len(outside) > 0 {
			return protocolErrorf(ErrKindGuard, "the %s agent wrote outside the places it may write: %s", s.role, strings.Join(outside, ", ")), nil
		}
	}
	if agentErr != nil && ctx.Err() == nil && !IsProtocolError(agentErr) {
		return nil, agentErr
	}
	if ctx.Err() != nil {
		return interrupted(ctx), nil
	}
	if agentErr != nil || isPure {
		return agentErr, nil
	}
	return e.settle(ctx, s)
}

// snapshot records the workspace before s. When nothing s runs touches the workspace (reuse),
// the HEAD the engine last saw serves, or the one the workspace tells (headReader): no
// snapshot of the outside places is taken for a step no OutsideChanges looks after.
func (e *engine) snapshot(ctx context.Context, s *stepRun, reuse bool) error {
	if h, ok := e.o.Workspace.(headReader); ok && reuse && e.head == "" {
		head, err := h.Head(ctx)
		if err != nil {
			return fmt.Errorf("snapshot workspace: %w", err)
		}
		e.head = head
	}
	if reuse && e.head != "" {
		s.snap = Snapshot{Head: e.head}
		return nil
	}
	var err error
	if s.snap, err = e.o.Workspace.Snapshot(ctx, s.role.Writes()); err != nil {
		return fmt.Errorf("snapshot workspace: %w", err)
	}
	e.head = s.snap.Head
	return nil
}

// runErr sorts an error into an interruption (the step's failure) or an orchestrator one.
func runErr(ctx context.Context, err error) (error, error) {
	if ctx.Err() != nil {
		return interrupted(ctx), nil
	}
	return nil, err
}

// settle applies the workspace rules after the agent: writing roles get an orchestrator
// commit, read-only roles must have left the workspace as they found it.
func (e *engine) settle(ctx context.Context, s *stepRun) (error, error) {
	ws := e.o.Workspace
	if s.role == RoleDo {
		e.preDo = s.snap.Head
	}
	if s.role == RoleDo || s.role == RoleAct {
		res, err := ws.Commit(ctx, s.snap, CommitRequest{Role: s.role, StepIndex: s.index, Iteration: e.iteration, Summary: s.out.Summary.Text})
		if err != nil {
			if ctx.Err() == nil && IsProtocolError(err) {
				return err, nil
			}
			return runErr(ctx, fmt.Errorf("commit %s step: %w", s.role, err))
		}
		e.noteCommit(s, res)
		return nil, nil
	}
	changed, err := ws.Changes(ctx, s.snap)
	if IsProtocolError(err) {
		return err, nil
	}
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	if _, builtin := e.o.Agents[s.role].Agent.(BuiltinCheck); builtin {
		// The check commands run in the check worktree; whatever changed the workspace meanwhile
		// (a process left behind) is not the built-in Check's fault, but must not leak into the
		// next Do commit.
		s.out.Summary.Warnings = append(s.out.Summary.Warnings, fmt.Sprintf("the workspace changed during the check step (%s); restored", OneLine(fmt.Sprint(changed), 120)))
		return nil, ws.Discard(ctx, s.snap)
	}
	if err := ws.Discard(ctx, s.snap); err != nil {
		return nil, err
	}
	return protocolErrorf(ErrKindWorkspace, "the %s agent is read-only but changed the workspace: %v", s.role, changed), nil
}

func (e *engine) noteCommit(s *stepRun, res CommitResult) {
	s.commit = res.Commit
	e.head = res.Commit
	if res.AgentCommits > 0 {
		s.events = append(s.events, Event{Type: "agent_commits_folded",
			Message: fmt.Sprintf("the agent made %d commit(s); folded into the orchestrator commit", res.AgentCommits)})
	}
	if res.Changed {
		s.events = append(s.events, Event{Type: "workspace_committed", Message: fmt.Sprintf("committed %.10s", res.Commit),
			Data: map[string]any{"commit": res.Commit, "patch_bytes": res.PatchBytes}})
	}
	if kb := e.o.Budgets.MaxPatchKB; kb > 0 && res.PatchBytes > int64(kb)*1024 {
		s.out.Status, s.out.StopReason = StatusStop, StopBudgetExceeded
		s.out.Summary.Errors = append(s.out.Summary.Errors,
			fmt.Sprintf("the task's patch is %d KiB, over max_patch_kb (%d)", (res.PatchBytes+1023)/1024, kb))
	}
}

// interrupted is the step error of a run stopped by Ctrl-C or SIGTERM; it wraps ctx.Err().
func interrupted(ctx context.Context) error {
	return interruption{ctx.Err()}
}

// interruption reads as what the user did, not as Go's "context canceled", which it wraps.
type interruption struct{ cause error }

func (interruption) Error() string   { return "interrupted: the step's processes were stopped" }
func (i interruption) Unwrap() error { return i.cause }

// errorOutput is the output.json the orchestrator writes for a step whose agent failed.
func errorOutput(err error) Output {
	kind := "orchestrator"
	var pe *ProtocolError
	if errors.As(err, &pe) {
		kind = pe.Kind
	}
	if errors.Is(err, context.Canceled) {
		kind = StopInterrupted
	}
	return Output{
		Status: StatusError, StopReason: StopNone,
		Summary:  Summary{Text: err.Error(), Warnings: []string{}, Errors: []string{err.Error()}},
		Progress: Progress{Title: "step error: " + kind, Details: []string{err.Error()}},
	}
}

func passedOrNot(evidence []Evidence) string {
	if allPassed(evidence) {
		return "they passed"
	}
	return "they did not pass"
}
