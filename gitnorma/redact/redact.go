// Package redact removes the values of credential-looking environment variables from what
// leaves the machine's private run directory.
package redact

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/loop"
)

// secretNameRE matches environment variable names that hold credentials (ANTHROPIC_API_KEY,
// GITHUB_TOKEN, DB_PASSWORD, ...).
var secretNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)`) })

// minSecretLen keeps short values (flags like "1", "true") from being taken for secrets.
const minSecretLen = 8

// Redactor removes the values of credential-looking environment variables from everything
// that leaves the machine's private run directory: task notes (the tracker, possibly shared),
// git notes and commit messages (pushed with the repository). Agents see the environment, so
// their summaries and the check output they cause may quote a key.
type Redactor struct {
	values []string
}

// New is the Redactor of the credentials in env (KEY=value pairs).
func New(env []string) Redactor {
	var r Redactor
	for _, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if ok && len(val) >= minSecretLen && secretNameRE().MatchString(name) {
			r.values = append(r.values, val)
			if b, err := json.Marshal(val); err == nil && string(b[1:len(b)-1]) != val {
				r.values = append(r.values, string(b[1:len(b)-1])) // as it appears inside JSON
			}
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// Failure is f with every secret removed from its commands and output, for the places it is
// shown beyond the run directory (the terminal, the notify payload, the tracker).
func (r Redactor) Failure(f *loop.Failure) *loop.Failure {
	if f == nil {
		return nil
	}
	out := *f
	out.Summary, out.Changes = r.Apply(f.Summary), r.Apply(f.Changes)
	out.Failing = make([]loop.FailedCheck, len(f.Failing))
	for i, c := range f.Failing {
		c.Cmd, c.OutputTail = r.Apply(c.Cmd), r.Apply(c.OutputTail)
		out.Failing[i] = c
	}
	return &out
}

// Live passes on what a run reports with every secret removed from the agents' words.
func (r Redactor) Live(f loop.LiveFunc) loop.LiveFunc {
	if f == nil {
		return nil
	}
	return func(l loop.Live) {
		l.Summary, l.Failure = r.Apply(l.Summary), r.Failure(l.Failure)
		f(l)
	}
}

// Apply returns s with every secret value replaced by [redacted].
func (r Redactor) Apply(s string) string {
	for _, v := range r.values {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}
