package worktree

import (
	"context"
	"fmt"
	"os"
)

// AddScratch checks commit out, detached, in a new worktree at path: somewhere to run checks on
// a tree no branch points at yet (a merge about to land). RemoveScratch throws it away.
func (m *Manager) AddScratch(ctx context.Context, path, commit string) error {
	if err := m.Git.Run(ctx, "worktree", "add", "-q", "--detach", path, commit); err != nil {
		return fmt.Errorf("check out %.10s in %s: %w", commit, path, err)
	}
	return nil
}

// RemoveScratch removes a scratch worktree with whatever its checks left in it; nothing there is
// anyone's work.
func (m *Manager) RemoveScratch(ctx context.Context, path string) error {
	if err := m.Git.Run(ctx, "worktree", "remove", "--force", path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}

// ClearScratch removes what a scratch worktree at path left behind when the process that
// added it died before RemoveScratch: its directory and git's record of it, so that adding it
// again works. It reports whether there was anything to remove.
func (m *Manager) ClearScratch(ctx context.Context, path string) (bool, error) {
	if !exists(path) {
		return false, nil
	}
	if m.Git.Run(ctx, "worktree", "remove", "--force", path) == nil {
		return true, nil
	}
	// Not (or no longer) a worktree git knows: a directory, and maybe a stale record of it.
	if err := os.RemoveAll(path); err != nil {
		return false, fmt.Errorf("remove leftover %s: %w", path, err)
	}
	return true, m.Git.Run(ctx, "worktree", "prune")
}
