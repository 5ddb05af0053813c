package worktree

import (
	"context"
	"fmt"
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
