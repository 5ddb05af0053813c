package loop

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// killGrace is how long a process group gets between SIGTERM and SIGKILL.
const killGrace = 2 * time.Second

// processResult is how a process ended.
type processResult struct {
	ExitCode int
	TimedOut bool
	Duration time.Duration
}

// runProcess runs cmd in its own process group and waits for it. On timeout or cancellation
// the whole group gets SIGTERM, then SIGKILL after killGrace, so an agent's children die with
// it; after a normal exit any member still alive is killed too. cmd's streams must be files
// (or nil): a pipe held open by a stray child would make Wait block.
func runProcess(ctx context.Context, cmd *exec.Cmd, timeout time.Duration) (processResult, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return processResult{ExitCode: -1}, err
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	res := processResult{}
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
	if ctx.Err() != nil && !res.TimedOut {
		return res, ctx.Err()
	}
	return res, nil
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
