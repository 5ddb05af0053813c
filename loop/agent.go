package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Agent plays one role for one step: it turns the step's input into its output.
type Agent interface {
	Run(ctx context.Context, req Request) (Output, error)
}

// pure marks the agents that run in-process and touch no file — the built-in Plan and Act —
// so their steps skip the workspace snapshot and settling: git calls every iteration would
// otherwise pay for nothing.
type pure interface{ pure() }

// Request is everything an agent gets for one step. The engine has already written
// input.json and opened the step's log files.
type Request struct {
	Input     Input
	InputPath string
	StepDir   string
	// WorkDir is the run's workspace; agents run there.
	WorkDir string
	// Stdout and Stderr are the step's log files (logs/stdout.txt, logs/stderr.txt).
	Stdout, Stderr io.Writer
	// StdoutPath is where Stdout lands, so an exec agent's output can be re-read from disk
	// instead of being held in memory.
	StdoutPath string
	// Timeout bounds the step; zero means no limit beyond ctx.
	Timeout time.Duration
	// Env is the environment the agent's process starts from (Options.Env).
	Env []string
}

// Protocol error kinds, recorded with the failed step.
const (
	ErrKindStart       = "start_failed"
	ErrKindExit        = "exit_status"
	ErrKindTimeout     = "timeout"
	ErrKindInvalidJSON = "invalid_json"
	ErrKindContract    = "contract_violation"
	ErrKindTooLarge    = "output_too_large"
	ErrKindWorkspace   = "workspace_violation"
	// ErrKindGuard is an agent that wrote where no agent may (the user's checkout, refs,
	// shared git config, git-norma's own state): it stops the run and every loop.
	ErrKindGuard = "guard_violation"
)

// ProtocolError is an agent that did not keep its contract: it could not start, exited
// non-zero, timed out, or printed something that is not a valid output for its role.
type ProtocolError struct {
	Kind string
	Msg  string
}

func (e *ProtocolError) Error() string { return fmt.Sprintf("%s: %s", e.Kind, e.Msg) }

// protocolErrorf builds a *ProtocolError.
func protocolErrorf(kind, format string, args ...any) error {
	return &ProtocolError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// IsProtocolError reports whether err is an agent contract failure (as opposed to an
// orchestrator failure such as a full disk).
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}
