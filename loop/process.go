package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/loop/sandbox"
)

// ProcessResult is how a process ended.
type ProcessResult struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
}

// RunProcess runs cmd through the launcher of the step sandbox ctx carries (a step's, or
// ConfineChecks'), confined and contained, and waits for it. On timeout or cancellation the
// launcher stops cmd's whole group, so an agent's children die with it; whatever it leaves
// running is killed, and named in an event. Should git-norma die meanwhile, the launcher sees
// it gone and ends cmd and everything cmd started. cmd's streams must be files (or nil): a
// pipe held open by a stray child would make Wait block.
func RunProcess(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (ProcessResult, error) {
	s, p, err := confine(ctx, cmd)
	if err != nil {
		return ProcessResult{ExitCode: -1}, err
	}
	srv, err := s.launcher.get(s.cfg, cmd.Dir)
	if err != nil {
		return ProcessResult{ExitCode: -1}, err
	}
	start := time.Now() // before the timeout's clock starts: a timed-out command took it all
	dctx, cancel := withTimeout(ctx, timeout)
	code, rep, err := srv.Run(cmd, p, dctx.Done())
	if errors.Is(err, sandbox.ErrTampered) {
		// An earlier command changed the launcher for good; it ended without starting this
		// one, which a new launcher starts (its streams are files, still unread).
		s.tampered = err.Error()
		s.launcher.close()
		if srv, err = s.launcher.get(s.cfg, cmd.Dir); err == nil {
			code, rep, err = srv.Run(cmd, p, dctx.Done())
		}
	}
	timedOut := context.Cause(dctx) == errTimedOut
	cancel()
	res := ProcessResult{ExitCode: code, TimedOut: timedOut, Duration: time.Since(start)}
	s.record(rep.Killed)
	switch {
	case res.TimedOut:
		return res, nil
	case ctx.Err() != nil:
		return res, ctx.Err()
	}
	return res, err
}

// errTimedOut is the cause of a command's context that its timeout ended, not its caller.
var errTimedOut = errors.New("timed out")

// withTimeout is ctx, ended after timeout too (0: no limit) with errTimedOut as its cause.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeoutCause(ctx, timeout, errTimedOut)
	}
	return context.WithCancel(ctx)
}

// BaseEnv is env, or this process's environment when there is none.
func BaseEnv(env []string) []string {
	if env == nil {
		return os.Environ()
	}
	return slices.Clone(env)
}

// StepEnv tells an agent process, whatever its kind, which run, task, role and step it is.
func StepEnv(req Request) []string {
	return []string{
		"NORMA_RUN_ID=" + req.Input.Run.ID,
		"NORMA_TASK_ID=" + req.Input.Task.ID,
		"NORMA_ROLE=" + string(req.Input.Step.Name),
		StepDirEnv + "=" + req.StepDir,
		"NORMA_INPUT=" + req.InputPath,
		"NORMA_WORKSPACE=" + req.WorkDir,
		CeilingEnv(req.WorkDir),
	}
}

// CeilingEnv keeps git, run by an agent or a check command in the workspace at dir, inside
// that workspace: should the worktree's .git file go missing, git would otherwise walk up to
// the user's own repository and commit, reset or check out there.
func CeilingEnv(dir string) string {
	return "GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)
}

// StartHint says what to do about an agent that could not be started.
func StartHint(err error) string {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return "command not found; check the agent's cmd in .norma/config.json"
	}
	if errors.Is(err, os.ErrPermission) {
		return "permission denied; make the file executable (chmod +x) or run it through its interpreter"
	}
	return err.Error()
}

// LogSize is how much of the log file at path was written before the agent started.
func LogSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// OpenRegular opens path for reading only if it is a regular file: a step's files are in a
// directory its agent can write, and on a named pipe put there an open would block for good.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
