package flock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A waiter gets the lock the moment the holder lets go, not at its next poll.
func TestAcquireWakesAtRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := Acquire(context.Background(), path, 0o600, Exclusive)
	require.NoError(t, err)

	got := make(chan time.Time, 1)
	go func() {
		r, err := Acquire(context.Background(), path, 0o600, Exclusive)
		if err == nil {
			got <- time.Now()
			r()
		}
	}()
	select {
	case <-got:
		t.Fatal("the lock was taken while it was held")
	case <-time.After(50 * time.Millisecond):
	}
	released := time.Now()
	release()
	select {
	case at := <-got:
		assert.Less(t, at.Sub(released), 10*time.Millisecond, "taken at once when released")
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never got the lock")
	}
}

// Shared holders share; an exclusive one waits for them all.
func TestAcquireShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	r1, err := Acquire(context.Background(), path, 0o600, Shared)
	require.NoError(t, err)
	r2, err := Acquire(context.Background(), path, 0o600, Shared)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, path, 0o600, Exclusive)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	r1()
	r2()
	r3, err := Acquire(context.Background(), path, 0o600, Exclusive)
	require.NoError(t, err)
	r3()
}

// A wait that its context ends returns at once, and the lock it would have taken is not kept.
func TestAcquireCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := Acquire(context.Background(), path, 0o600, Exclusive)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Acquire(ctx, path, 0o600, Exclusive)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled wait did not return")
	}
	release()
	// The abandoned wait takes the lock when it is released, then lets it go at once.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		r, err := Acquire(ctx, path, 0o600, Exclusive)
		if err != nil {
			return false
		}
		r()
		return true
	}, 5*time.Second, 20*time.Millisecond)
}

// A directory can be the lock: nobody deletes it while it holds anything, where an agent could
// delete a lock file and let the next holder in.
func TestAcquireLocksADirectory(t *testing.T) {
	dir := t.TempDir()
	release, err := Acquire(context.Background(), dir, 0, Exclusive)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, dir, 0, Exclusive)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "held by the first")
	release()
	again, err := Acquire(context.Background(), dir, 0, Exclusive)
	require.NoError(t, err)
	again()
}

// WaitFor says who takes the lock beside it, replacing (never writing through) what is there,
// and calls busy only when it has to wait.
func TestWaitForNamesItsHolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "locks", "land.lock")
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.Symlink(victim, HolderPath(path)))

	busy := 0
	release, err := WaitFor(context.Background(), path, "the first", func() { busy++ })
	require.NoError(t, err)
	assert.Equal(t, 0, busy, "free: no wait")
	data, err := os.ReadFile(HolderPath(path))
	require.NoError(t, err)
	assert.Equal(t, "the first", string(data))
	kept, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(kept), "the link was replaced, not written through")

	waiting, got := make(chan struct{}), make(chan error, 1)
	go func() {
		second, err := WaitFor(context.Background(), path, "the second", func() { close(waiting) })
		if err == nil {
			second()
		}
		got <- err
	}()
	<-waiting // told it must wait, while the first holds the lock
	release()
	require.NoError(t, <-got)
	data, err = os.ReadFile(HolderPath(path))
	require.NoError(t, err)
	assert.Equal(t, "the second", string(data))
}
