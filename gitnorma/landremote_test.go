package gitnorma

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run's start fetches the remote's target before it takes the landing lock: a remote slow
// to answer holds up no landing (nor fallback guard) of another run meanwhile. Under the lock
// it only moves the local target to what was fetched.
func TestSyncTargetFetchesOutsideTheLandingLock(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	bare := bareRepo(t)
	repo.Must("remote", "add", "origin", bare)
	repo.WriteFile("theirs.txt", "landed by another worker\n")
	theirs := repo.Commit("theirs")
	repo.Must("push", "-q", "origin", "main")
	repo.Must("reset", "-q", "--hard", "HEAD~1")

	// The remote's upload-pack says it started, then waits to be let go: pipes, no sleeps.
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "go")
	require.NoError(t, syscall.Mkfifo(started, 0o600))
	require.NoError(t, syscall.Mkfifo(release, 0o600))
	script := filepath.Join(dir, "upload-pack")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho >'"+started+"'\nread x <'"+release+"'\nexec git upload-pack \"$@\"\n"), 0o755))
	repo.Must("config", "remote.origin.uploadpack", script)
	a.Config.Remote = "origin"

	synced := make(chan error, 1)
	go func() { synced <- a.syncTargetLocked(ctx, "main", nil, "norma-t1") }()
	_, err := os.ReadFile(started) // the fetch is under way
	require.NoError(t, err)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	unlock, lockErr := a.Repo.takeLandLock(lctx, "a landing of another task", "land", nil, "norma-t2")
	cancel()
	if lockErr == nil {
		unlock()
	}
	require.NoError(t, os.WriteFile(release, []byte("\n"), 0o600))
	require.NoError(t, <-synced)
	assert.NoError(t, lockErr, "the landing lock is free while the remote is fetched from")
	assert.Equal(t, theirs, repo.Must("rev-parse", "main"), "main is brought up to the remote's")
}

// A run's fetch that read the remote before another run's landing moved it (and the local
// target) on leaves the local target ahead of what was fetched: the run fetches again under
// the lock, and starts, in place of taking the landing for the user's own commits.
func TestSyncTargetFetchesAgainWhenALandingOvertookIt(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	stale := bareRepo(t)
	repo.Must("push", "-q", stale, "main") // the remote as the fetch read it
	bare := bareRepo(t)
	repo.Must("remote", "add", "origin", bare)
	repo.WriteFile("landed.txt", "another run's landing\n")
	landed := repo.Commit("landed")
	repo.Must("push", "-q", "origin", "main")

	once := filepath.Join(t.TempDir(), "once")
	require.NoError(t, os.WriteFile(once, nil, 0o600))
	script := filepath.Join(t.TempDir(), "upload-pack")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nif [ -e '"+once+"' ]; then rm '"+once+"'; exec git upload-pack '"+stale+"'; fi\nexec git upload-pack \"$@\"\n"), 0o755))
	repo.Must("config", "remote.origin.uploadpack", script)
	a.Config.Remote = "origin"

	require.NoError(t, a.syncTargetLocked(ctx, "main", nil, "norma-t1"))
	assert.Equal(t, landed, repo.Must("rev-parse", "main"))
	assert.Equal(t, landed, repo.Must("rev-parse", "refs/remotes/origin/main"))
}

// bareRepo is an empty bare repository, a remote to push to.
func bareRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "--bare")
	return dir
}
