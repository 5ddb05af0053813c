package gitnorma

import (
	"context"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// staleLockEvent records the locks (index.lock, HEAD.lock; comma separated in path) removed
// from a run worktree's git directory, left by whoever (a killed git, an agent) held them.
func staleLockEvent(now time.Time, path, leftBy string) store.Event {
	return store.Event{TS: now, Type: "stale_lock_removed",
		Message: "removed " + path + ", left by " + leftBy + ": git refuses to commit in the worktree while a lock is there",
		Data:    map[string]any{"path": path}}
}

// clearStaleLock removes an index.lock from the workspace's git directory before git-norma
// writes there. The engine calls the workspace only once the agent's (or a check's) process
// group has ended and git-norma's git commands returned: nobody holds the lock, and left
// there it fails every later commit, reset and rescue of the task.
func (w workspace) clearStaleLock(ctx context.Context) error {
	path, err := w.ws.RemoveStaleLock()
	if path != "" && w.events != nil {
		w.events(ctx, staleLockEvent(time.Time{}, path, "a process of the step that ended")) // stamped by events
	}
	return err
}
