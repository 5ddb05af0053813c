package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// indexLock is the file git holds while it writes an index. A killed git (or an agent) leaves
// it, and every later index write fails ("Unable to create .../index.lock: File exists")
// until someone removes it: git never does.
const indexLock = "index.lock"

// RemoveStaleLock removes index.lock and HEAD.lock from the worktree's git directories, once
// no process of the run can run git there (between steps, the agent's process group gone; or
// a dead run's), so a lock is stale (one newer than lockGrace is waited for first). It returns
// the paths removed, comma separated.
func (w *Workspace) RemoveStaleLock() (string, error) {
	var removed []string
	// HEAD.lock is the same trap for the commit that moves the worktree's HEAD.
	for _, path := range []string{
		filepath.Join(w.gitDir, indexLock), filepath.Join(w.gitDir, "HEAD.lock"),
		filepath.Join(w.ownDir, indexLock), filepath.Join(w.ownDir, "HEAD.lock"),
	} {
		gone, err := removeStale(path)
		if err != nil {
			return strings.Join(removed, ", "), err
		}
		if gone {
			removed = append(removed, path)
		}
	}
	return strings.Join(removed, ", "), nil
}

// lockGrace is how recently a lock may have been written by a git command still finishing
// (someone's `git status` there, a hook's): such a lock is waited for, not removed.
const lockGrace = 2 * time.Second

// removeStale removes the lock at path once left alone for lockGrace, and says if it did.
func removeStale(path string) (bool, error) {
	// Never longer than lockGrace in all: a lock dated in the future, or one a leftover
	// process keeps rewriting, must not hold the run (and the worktree lock) up.
	deadline := time.Now().Add(lockGrace)
	for {
		st, err := os.Lstat(path)
		if os.IsNotExist(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		wait := min(lockGrace-time.Since(st.ModTime()), time.Until(deadline))
		if wait <= 0 {
			break
		}
		time.Sleep(min(50*time.Millisecond, wait))
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return false, err
	}
	return true, nil
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
