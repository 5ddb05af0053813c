package loop

import (
	"context"
	"errors"
	"os"
	"os/exec"
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

// RunProcess runs cmd in its own process group and waits for it. On timeout or cancellation
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
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	var waitErr error
	select {
	case waitErr = <-done:
	case <-expired:
		res.TimedOut = true
		waitErr = stopGroup(pgid, done)
	case <-ctx.Done():
		waitErr = stopGroup(pgid, done)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	res.Duration = time.Since(start)
	res.ExitCode = exitCodeOf(cmd, waitErr)
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

// stopGroup asks the group to stop, then forces it, and returns the leader's Wait error.
func stopGroup(pgid int, done <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(killGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return <-done
	}
}

func exitCodeOf(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState != nil {
		return cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
