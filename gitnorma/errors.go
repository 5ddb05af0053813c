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

// The kinds of failure a use case returns, each its own exit code (ExitCode). A use case says
// what went wrong; the exit code follows from that in one place. An error of no kind is a
// failure of the command's work (exit 1).
var (
	// ErrStopped: a budget, a stop rule or a pending guard violation stopped the work.
	ErrStopped = errors.New("stopped")
	// ErrLandRefused: landing (or a run that would land) was refused.
	ErrLandRefused = errors.New("landing refused")
	// ErrEnvironment: the environment is unusable — not a repository, not initialised, a
	// malformed config, a corrupt or newer database, a missing or too old tool.
	ErrEnvironment = errors.New("unusable environment")
	// ErrUsage: what was typed is wrong.
	ErrUsage = errors.New("usage error")
)

// exitCodes are the exit codes of the kinds (DESIGN.md section 2).
var exitCodes = map[error]int{ErrStopped: ExitStopped, ErrLandRefused: ExitLandRefused, ErrEnvironment: ExitFatal, ErrUsage: ExitUsage}

// Error is a failure of a kind and, where there is one, the command that gets the user
// unstuck. Once an error is an *Error, wrapping it again keeps its kind (withKind).
type Error struct {
	// Kind is one of the kinds above; nil for a failure of the command's work.
	Kind error
	Err  error
	// Hint is the next thing to do, printed on its own line.
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap lets errors.Is find the kind as well as the cause.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Kind}
}

// ExitCode is the exit code of err's kind: 0 for no error, 1 for an error of no kind.
func ExitCode(err error) int {
	var e *Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e) && e.Kind != nil:
		return exitCodes[e.Kind]
	}
	return ExitFail
}

// fatalf is an error about the environment (not a repo, bad config, corrupt db).
func fatalf(hint, format string, args ...any) error {
	return &Error{Kind: ErrEnvironment, Err: fmt.Errorf(format, args...), Hint: hint}
}

// usagef is an error in what the user typed.
func usagef(hint, format string, args ...any) error {
	return &Error{Kind: ErrUsage, Err: fmt.Errorf(format, args...), Hint: hint}
}

// failf is a command that ran but failed, with the way on.
func failf(hint, format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...), Hint: hint}
}

// withKind gives err a kind unless it is already an *Error (which keeps its own).
func withKind(kind, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{Kind: kind, Err: err}
}
