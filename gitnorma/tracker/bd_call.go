package tracker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// DefaultBDTimeout bounds one bd call when BD.Timeout is zero. A call normally takes 0.1–0.5 s;
// a call that takes longer than this is stuck (a lock, a hung Dolt), not slow.
const DefaultBDTimeout = 30 * time.Second

// MaxBDArg is the largest argument bd can receive: Linux caps one argv string at 128 KiB
// including its terminating NUL, and bd takes notes only as an argument (--notes).
const MaxBDArg = 128*1024 - 1

// bdWaitDelay is how long a killed bd may keep its output pipes open before Wait gives up.
const bdWaitDelay = 5 * time.Second

// bdResult is what a successful (exit 0) call printed.
type bdResult struct {
	args   []string
	stdout []byte
	stderr string
}

// call runs bd once. Exit status 0 returns the output; anything else is an error: a *CallError
// when bd ran and failed, a plain error when it could not run or timed out.
func (b *BD) call(ctx context.Context, args []string) (*bdResult, error) {
	for _, a := range args {
		if len(a) > MaxBDArg {
			return nil, fmt.Errorf("bd %s: an argument is %d bytes; Linux caps one argument at 128 KiB", args[0], len(a))
		}
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("bd %s: an argument contains a NUL byte, which cannot be passed to a program", args[0])
		}
	}
	bin := cmp.Or(b.Bin, "bd")
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultBDTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = b.Dir
	cmd.Env = b.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// bd runs in its own process group so a timeout kills it with everything it started
	// (hooks, a Dolt helper) and nothing is left holding the output pipes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return os.ErrProcessDone
	}
	cmd.WaitDelay = bdWaitDelay

	err := cmd.Run()
	if err == nil {
		return &bdResult{args: args, stdout: stdout.Bytes(), stderr: stderr.String()}, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("bd %s: %w", args[0], ctx.Err())
	case cctx.Err() != nil:
		return nil, fmt.Errorf("bd %s timed out after %s: %w", args[0], timeout, context.DeadlineExceeded)
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		// A missing Dir fails the same way (with Setpgid Go reports it as fork/exec ENOENT).
		if _, derr := os.Stat(cmp.Or(b.Dir, ".")); derr != nil {
			return nil, fmt.Errorf("bd %s: repository directory: %w", args[0], derr)
		}
		return nil, fmt.Errorf("bd is not installed or not on PATH (looked for %q): %w", bin, err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return nil, fmt.Errorf("run bd %s: %w", args[0], err)
	}
	return nil, &CallError{
		Args: slices.Clone(args), ExitCode: ee.ExitCode(), Stderr: stderr.String(),
		Message: jsonErrorMessage(stdout.Bytes()),
	}
}

// environ is the caller's environment without git's repository-pinning variables (a hook's
// GIT_DIR must not leak into bd's own git calls), with PWD matching Dir, plus Env.
// BD_JSON_ENVELOPE is dropped so output keeps the shape the parsers expect.
func (b *BD) environ() []string {
	env := slices.DeleteFunc(git.StripRepoVars(os.Environ()), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "BD_JSON_ENVELOPE" || (name == "PWD" && b.Dir != "")
	})
	if b.Dir != "" {
		if abs, err := filepath.Abs(b.Dir); err == nil {
			env = append(env, "PWD="+abs)
		}
	}
	return append(env, b.Env...)
}
