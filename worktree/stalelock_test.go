package worktree

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaveIndexLock makes the index.lock a killed git (or an agent) leaves in the worktree's own
// git directory, and returns its path.
func (f *fixture) leaveIndexLock(ws *Workspace) string {
	f.t.Helper()
	return f.leaveLock(filepath.Join(f.gitIn(ws.Dir(), "rev-parse", "--absolute-git-dir"), "index.lock"))
}

// leaveLock makes the lock file a killed git leaves at lock, and returns its path.
func (f *fixture) leaveLock(lock string) string {
	f.t.Helper()
	require.NoError(f.t, os.WriteFile(lock, nil, 0o644))
	left := time.Now().Add(-time.Minute) // by a process that died a while ago
	require.NoError(f.t, os.Chtimes(lock, left, left))
	return lock
}

// TestRemoveStaleLockLetsTheCommitThrough: with the lock a killed git of git-norma's left in its
// own git directory for the worktree, git refuses to commit; once it is removed the step
// commits as usual. The agent's own lock stops only the agent's git, and goes too.
func TestRemoveStaleLockLetsTheCommitThrough(t *testing.T) {
	f, ws := wsFixture(t)
	since := f.state(ws)
	writeFile(t, ws.Dir(), "a.txt", "x\n")
	agents := f.leaveIndexLock(ws)
	lock := f.leaveLock(filepath.Join(ws.ownDir, "index.lock"))
	_, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
	require.ErrorContains(t, err, "index.lock", "git itself never removes the lock")

	removed, err := ws.RemoveStaleLock()
	require.NoError(t, err)
	assert.Equal(t, agents+", "+lock, removed)
	assert.NoFileExists(t, lock)
	assert.NoFileExists(t, agents)
	res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
	require.NoError(t, err)
	assert.True(t, res.Changed)

	removed, err = ws.RemoveStaleLock()
	require.NoError(t, err)
	assert.Empty(t, removed, "no lock, nothing removed")
}

// TestRemoveClearsAStaleLockFirst: a dead run's worktree with a lock left in it is still
// rescued and removed (the lock would fail the rescue's git add, every time), and says so.
func TestRemoveClearsAStaleLockFirst(t *testing.T) {
	f, ws := wsFixture(t)
	writeFile(t, ws.Dir(), "a.txt", "uncommitted\n")
	lock := f.leaveIndexLock(ws)

	found, err := f.m.IndexLock(f.ctx, ws.Dir())
	require.NoError(t, err)
	assert.Equal(t, lock, found, "doctor finds it where git looks for it")
	removed, err := f.m.Remove(f.ctx, ws.Dir(), "R-1", "T-1")
	require.NoError(t, err)
	assert.Equal(t, lock, removed)
	assert.NoDirExists(t, ws.Dir())
	assert.Equal(t, "uncommitted", f.show("refs/heads/norma/task/T-1", "a.txt"))
}

// A HEAD.lock left in the worktree's git directory would fail every commit the same way.
func TestRemoveStaleLockRemovesAHeadLockToo(t *testing.T) {
	f, ws := wsFixture(t)
	since := f.state(ws)
	writeFile(t, ws.Dir(), "a.txt", "x\n")
	lock := f.leaveLock(filepath.Join(ws.ownDir, "HEAD.lock"))
	_, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
	require.ErrorContains(t, err, "HEAD.lock")

	removed, err := ws.RemoveStaleLock()
	require.NoError(t, err)
	assert.Equal(t, lock, removed)
	res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
	require.NoError(t, err)
	assert.True(t, res.Changed)
}

// A lock a live git command holds for a moment (someone's git status in the run worktree) is
// waited for, not removed under it.
func TestRemoveStaleLockWaitsForALiveOne(t *testing.T) {
	f, ws := wsFixture(t)
	lock := filepath.Join(f.gitIn(ws.Dir(), "rev-parse", "--absolute-git-dir"), "index.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	released := time.AfterFunc(200*time.Millisecond, func() { _ = os.Remove(lock) })
	defer released.Stop()
	start := time.Now()
	removed, err := ws.RemoveStaleLock()
	require.NoError(t, err)
	assert.Empty(t, removed, "its holder removed it")
	assert.Less(t, time.Since(start), lockGrace, "no longer than it was held")
}

// A lock dated in the future (touch -d tomorrow) is waited for no longer than a fresh one.
func TestRemoveStaleLockWaitsBoundedly(t *testing.T) {
	f, ws := wsFixture(t)
	lock := filepath.Join(f.gitIn(ws.Dir(), "rev-parse", "--absolute-git-dir"), "index.lock")
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	tomorrow := time.Now().Add(24 * time.Hour)
	require.NoError(t, os.Chtimes(lock, tomorrow, tomorrow))
	start := time.Now()
	removed, err := ws.RemoveStaleLock()
	require.NoError(t, err)
	assert.Equal(t, lock, removed)
	assert.Less(t, time.Since(start), lockGrace+time.Second)
}
