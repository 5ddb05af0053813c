package agent

import (
	"errors"
	"fmt"

	"github.com/git-norma/git-norma/loop"
)

// Protocol error kinds of the agent CLIs (claude, codex, gemini, opencode), on top of the
// exec kinds in agent.go. Each names what the user has to fix.
const (
	// ErrKindAuth: the CLI has no or bad credentials (HTTP 401/403, "Not logged in").
	ErrKindAuth = "agent_auth"
	// ErrKindAgent: the CLI reported a failure of the run itself (API error, failed turn).
	ErrKindAgent = "agent_error"
	// ErrKindLimit: the CLI stopped at one of its own limits (max turns, max budget).
	ErrKindLimit = "agent_limit"
	// ErrKindRefused: the CLI refused to run in this setup (untrusted workspace, a bypass flag
	// as root, not a git repository, a usage error).
	ErrKindRefused = "agent_refused"
	// ErrKindNoAnswer: the run ended normally but carried no answer (claude ignored the
	// schema, opencode stopped on a rejected permission, codex sent no final message).
	ErrKindNoAnswer = "no_answer"
)

// cliErrorf builds a *ProtocolError whose message starts with the CLI's name.
func cliErrorf(kind, cli, format string, args ...any) error {
	return &loop.ProtocolError{Kind: kind, Msg: cli + ": " + fmt.Sprintf(format, args...)}
}

// repairable reports whether err is an answer a second, repair-only run could fix.
func repairable(err error) bool {
	var pe *loop.ProtocolError
	return errors.As(err, &pe) && (pe.Kind == loop.ErrKindInvalidJSON || pe.Kind == loop.ErrKindContract || pe.Kind == ErrKindNoAnswer)
}

// afterRepair marks the final error of a run whose repair attempt failed too.
func afterRepair(err error) error {
	var pe *loop.ProtocolError
	if !errors.As(err, &pe) {
		return err
	}
	return &loop.ProtocolError{Kind: pe.Kind, Msg: pe.Msg + " (after one repair attempt)"}
}
