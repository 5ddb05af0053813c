// Package gitnorma is the application: it opens a repository from anywhere inside it, reads
// the config, and wires tracker → loop → store → mirrors → worktree for each command's use
// case. It knows neither agent prompts nor SQL.
package gitnorma

import (
	"errors"
	"fmt"
)

// Exit codes (DESIGN.md section 2).
const (
	ExitOK          = 0
	ExitFail        = 1
	ExitStopped     = 2
	ExitLandRefused = 3
	ExitFatal       = 128
	ExitUsage       = 129
	ExitInterrupted = 130
)

// Error is a failure with the exit code it maps to and, where there is one, the command that
// gets the user unstuck.
type Error struct {
	Code int
	Err  error
	// Hint is the next thing to do, printed on its own line.
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// ExitCode implements kong.ExitCoder.
func (e *Error) ExitCode() int { return e.Code }

// fatalf is an error about the environment (not a repo, bad config, corrupt db): exit 128.
func fatalf(hint, format string, args ...any) error {
	return &Error{Code: ExitFatal, Err: fmt.Errorf(format, args...), Hint: hint}
}

// usagef is an error in what the user typed: exit 129.
func usagef(hint, format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...), Hint: hint}
}

// failf is a command that ran but failed: exit 1.
func failf(hint, format string, args ...any) error {
	return &Error{Code: ExitFail, Err: fmt.Errorf(format, args...), Hint: hint}
}

// withCode wraps err with an exit code unless it already carries one.
func withCode(code int, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Err: err}
}
