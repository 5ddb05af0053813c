package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// indexLock is the file git creates next to a worktree's index while it writes it, and removes
// when done. A git process that is killed (or an agent that makes the file itself) leaves it
// behind, and every later command that writes the index fails on it ("Unable to create
// .../index.lock: File exists") until someone removes it: git never does.
const indexLock = "index.lock"

// RemoveStaleLock removes an index.lock (and a HEAD.lock) from the worktree's git directory. Call it only when no
// process can be running git in the worktree, so that any lock there is stale: between steps,
// once the agent's process group has ended (git-norma's own git commands there have all
// returned by then), or in a dead run's worktree. It returns the paths removed, comma
// separated ("" when there was none).
func (w *Workspace) RemoveStaleLock() (string, error) {
	var removed []string
	// HEAD.lock is the same trap for the commit that moves the worktree's HEAD.
	for _, name := range []string{indexLock, "HEAD.lock"} {
		path := filepath.Join(w.gitDir, name)
		if err := os.Remove(path); err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return strings.Join(removed, ", "), err
		}
		removed = append(removed, path)
	}
	return strings.Join(removed, ", "), nil
}

// IndexLock returns the path of the index.lock in the git directory of the worktree at path,
// "" when there is none. Whether it is stale is the caller's to judge (is a run alive there?).
func (m *Manager) IndexLock(ctx context.Context, path string) (string, error) {
	admin, err := m.AdminDir(ctx, path)
	if err != nil {
		return "", err
	}
	lock := filepath.Join(admin, indexLock)
	if _, err := os.Lstat(lock); err != nil {
		if os.IsNotExist(err) {
			return "", nil
		}
		return "", err
	}
	return lock, nil
}
