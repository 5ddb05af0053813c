package tracker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// CallError is a failed bd call: bd exited non-zero, or it exited 0 without the output the
// command promises (bd reports some per-id failures only on stderr).
type CallError struct {
	// Args is the argv after the executable name.
	Args []string
	// ExitCode is bd's exit status; 0 when bd claimed success but its output was unusable.
	ExitCode int
	// Stderr is everything bd wrote to stderr.
	Stderr string
	// Message is bd's JSON "error" text from stdout, or what was wrong with the output.
	Message string
}

func (e *CallError) Error() string {
	cmd := "bd"
	for _, a := range e.Args {
		cmd += " " + displayArg(a)
	}
	var parts []string
	if e.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit status %d", e.ExitCode))
	}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	if s := withoutWarnings(e.Stderr); s != "" && !strings.Contains(e.Message, s) {
		parts = append(parts, truncate(s, 2000))
	}
	if len(parts) == 0 {
		parts = append(parts, "failed")
	}
	return cmd + ": " + strings.Join(parts, ": ")
}

// withoutWarnings is bd's stderr without its advice (a "Warning:" line and the indented lines
// under it: a workspace's permissions, a deprecated metadata key, an unset beads.role), which
// bd prints before every error and which says nothing about it. Advice alone is kept.
func withoutWarnings(stderr string) string {
	var kept []string
	inWarning := false
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		inWarning = strings.HasPrefix(strings.ToLower(line), "warning:") || (inWarning && indented)
		if !inWarning {
			kept = append(kept, line)
		}
	}
	if len(kept) == 0 {
		return strings.TrimSpace(stderr)
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

// displayArg keeps error messages readable: long arguments (notes) are cut, and arguments with
// spaces or quotes are quoted.
func displayArg(a string) string {
	if len(a) > 80 {
		a = fmt.Sprintf("%s(%d bytes)", truncate(a, 60), len(a))
	}
	if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
		return fmt.Sprintf("%q", a)
	}
	return a
}

// truncate cuts s to at most n bytes, without splitting a UTF-8 sequence, and marks the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// taskError adds ErrNotFound or ErrClaimed to a bd failure that says so, keeping the
// *CallError reachable with errors.As.
func taskError(what string, err error) error {
	var ce *CallError
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.notFound():
		return fmt.Errorf("%s: %w: %w", what, ErrNotFound, err)
	case ce.claimRefused():
		return fmt.Errorf("%s: %w: %w", what, ErrClaimed, err)
	}
	return err
}

func (r *bdResult) errorf(msg string) *CallError {
	return &CallError{Args: slices.Clone(r.args), Stderr: r.stderr, Message: msg}
}

// shapeError reports output bd printed with exit 0 that is not what the command promises,
// quoting its start so a format change in a new bd release is easy to recognize.
func (r *bdResult) shapeError(want string, err error) *CallError {
	msg := "unexpected output (" + want + ")"
	if err != nil {
		msg += ": " + err.Error()
	}
	if e := jsonErrorMessage(r.stdout); e != "" {
		msg += ": " + e
	}
	start := string(bytes.TrimSpace(r.stdout))
	if start == "" {
		msg += "; stdout is empty"
	} else {
		msg += fmt.Sprintf("; stdout starts with %q", truncate(start, 200))
	}
	return r.errorf(msg)
}

// jsonErrorMessage returns the "error" text of bd's JSON error object ({"error": ...,
// "schema_version": 1}), or "" when stdout is not one.
func jsonErrorMessage(stdout []byte) string {
	var e struct {
		Error string `json:"error"`
		Hint  string `json:"hint"`
	}
	if json.Unmarshal(stdout, &e) != nil || e.Error == "" {
		return ""
	}
	if e.Hint != "" {
		return e.Error + " (" + e.Hint + ")"
	}
	return e.Error
}

// bd's messages for an id that resolves to nothing: show's JSON error, close's, and the
// "Error resolving X: no issue found matching" update and label print on stderr.
var bdNotFoundRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`no issues? found matching|(?i:\bissue \S+ not found)`)
})

func (e *CallError) notFound() bool {
	return bdNotFoundRE().MatchString(e.Message) || bdNotFoundRE().MatchString(e.Stderr)
}

// claimRefused recognizes `update --claim` losing: "Error claiming X: issue already claimed by
// Y", (newer bd) "issue not claimable: status S", or, on a Dolt server where another worker's
// claim committed first, a serialization failure (see raceLost).
func (e *CallError) claimRefused() bool {
	s := e.Stderr + "\n" + e.Message
	return strings.Contains(s, "already claimed") || strings.Contains(s, "not claimable") || e.raceLost()
}

// raceLost recognizes Dolt's `Error 1213 (40001): serialization failure`: a transaction that
// lost to a concurrent one (two workers claiming at once). Done again it may go through.
func (e *CallError) raceLost() bool {
	s := e.Stderr + "\n" + e.Message
	return strings.Contains(s, "Error 1213") || strings.Contains(s, "serialization failure")
}
