package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// killGrace is how long a process group gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// ProcessResult is how a process ended.
type ProcessResult struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
}

// RunProcess runs cmd in its own session and process group and waits for it. On timeout or cancellation
// the whole group gets SIGTERM, then SIGKILL after killGrace, so an agent's children die with
// it; after a normal exit any member still alive is killed too. cmd's streams must be files
// (or nil): a pipe held open by a stray child would make Wait block.
//
// Within a step (a step sandbox in ctx) cmd starts through the sandbox launcher: confined,
// and contained — whatever it leaves running is killed when it ends, and named in an event.
func RunProcess(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (ProcessResult, error) {
	sb, launch, err := confine(ctx, cmd)
	if err != nil {
		return ProcessResult{ExitCode: -1}, err
	}
	// A session of its own, so also a process group of its own, and no controlling terminal:
	// an agent must not reach the user's terminal (TIOCSTI would type into the user's shell).
	// The launcher's attributes (sandbox.Wrap) say so already, and may say more.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	start := time.Now()
	err = cmd.Start()
	if launch != nil {
		launch.Started()
	}
	if err != nil {
		return ProcessResult{ExitCode: -1}, err
	}
	pgid := cmd.Process.Pid
	if path, ok := ctx.Value(pgidFileKey{}).(string); ok {
		// Leave a trace of the group while it runs: if git-norma itself is killed, the next
		// run finds it and stops the orphans. The file is emptied afterwards, not removed:
		// rewriting it in place costs no new file per process.
		_ = os.WriteFile(path, []byte(strconv.Itoa(pgid)+"\n"), 0o600)
		defer os.WriteFile(path, nil, 0o600) //nolint:errcheck // a stale trace is checked before use
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	res := ProcessResult{}
	select {
	case <-done:
	case <-expired:
		res.TimedOut = true
		stopGroup(pgid, done)
	case <-ctx.Done():
		stopGroup(pgid, done)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	res.Duration = time.Since(start)
	// Wait has returned: ProcessState is set, or nil (-1) when the leader could not be waited for.
	res.ExitCode = cmd.ProcessState.ExitCode()
	if launch != nil {
		rep := launch.Report()
		sb.record(rep.Killed)
		if err := rep.Err(); err != nil && ctx.Err() == nil && !res.TimedOut {
			return ProcessResult{ExitCode: -1}, err
		}
	}
	if ctx.Err() != nil && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
}

type pgidFileKey struct{}

// PGIDFile is the name, in a run's steps directory, of the file holding the process group of
// the agent or check command running now (empty between processes).
const PGIDFile = ".running.pgid"

// withPGIDFile makes RunProcess record each process group it starts in path while it runs.
func withPGIDFile(ctx context.Context, path string) context.Context {
	return context.WithValue(ctx, pgidFileKey{}, path)
}

// stopGroup asks the group to stop, then forces it, and waits for the leader.
func stopGroup(pgid int, done <-chan error) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(killGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
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
