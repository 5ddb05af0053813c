package tracker

import (
	"context"
	"fmt"
	"time"
)

// InitOptions choose what `bd init` may do besides creating .beads/.
type InitOptions struct {
	Prefix string
	// Hooks lets bd set core.hooksPath to its own hooks (skipped by default: it would take over
	// the repository's hooks).
	Hooks bool
	// Agents lets bd write AGENTS.md, CLAUDE.md and .claude/ (skipped by default).
	Agents bool
}

// Init runs `bd init --prefix P --non-interactive [--skip-agents] [--skip-hooks]`. bd commits
// the whole git index when it initialises, so the caller must make sure the index is clean.
// Its output is human text even with --json (beads CONTRACT §4 init), so only the exit status
// is read.
func (b *BD) Init(ctx context.Context, o InitOptions) (string, error) {
	if !ValidPrefix(o.Prefix) {
		return "", fmt.Errorf("invalid prefix %q", o.Prefix)
	}
	args := []string{"init", "--prefix", o.Prefix, "--non-interactive"}
	if !o.Agents {
		args = append(args, "--skip-agents")
	}
	if !o.Hooks {
		args = append(args, "--skip-hooks")
	}
	slow := *b
	slow.Timeout = max(slow.Timeout, 2*time.Minute) // creating the Dolt database takes a while
	res, err := slow.call(ctx, args)
	if err != nil {
		return "", err
	}
	return string(res.stdout) + res.stderr, nil
}
