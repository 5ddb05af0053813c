// Package flock takes file locks (flock(2)) for git-norma's short critical sections, waiting
// without polling.
//
// A poll sleeps past the moment a lock is released. git-norma's own background writes (the
// task's state in the backlog, journal notes) hold their locks for a few milliseconds while
// the next step waits on the same lock, so a 20 ms poll cost an iteration more than the writes
// themselves. A lock that is taken here is waited for in a blocking flock on a thread of its
// own, and is taken the moment it is released; the wait still ends with its context.
package flock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Shared and Exclusive are the lock modes: readers share, a read-modify-write excludes
// everyone else.
const (
	Shared    = syscall.LOCK_SH
	Exclusive = syscall.LOCK_EX
)

// Acquire opens (creating it with perm) the lock file at path, takes the lock how on it, and
// returns the function that releases it. flock belongs to the open file, so two holders in one
// process exclude each other just as two processes do, and the kernel releases a lock whose
// holder died. path may be a directory, which nobody can delete while it holds anything.
func Acquire(ctx context.Context, path string, perm os.FileMode, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if errors.Is(err, syscall.EISDIR) {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, err
	}
	release := func() { _ = f.Close() } // closing the file releases the lock
	fd := int(f.Fd())
	err = lock(fd, how|syscall.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, err
	}
	if err := ctx.Err(); err != nil { // no thread left blocked for a wait nobody wants
		f.Close()
		return nil, err
	}
	got := make(chan error, 1)
	go func() { got <- lock(fd, how) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, err
		}
		return release, nil
	case <-ctx.Done():
		// The blocked flock cannot be interrupted: close the file once it returns, which
		// releases whatever it took.
		go func() {
			<-got
			f.Close()
		}()
		return nil, ctx.Err()
	}
}

func lock(fd, how int) error {
	for {
		if err := syscall.Flock(fd, how); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Wait takes the exclusive lock at path, made (with its directory: .norma/locks is not in git,
// and a fresh clone has the config but no locks yet) when missing, waiting as long as ctx lets it.
func Wait(ctx context.Context, path string) (func(), error) {
	release, err := Acquire(ctx, path, 0o600, Exclusive)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		return Acquire(ctx, path, 0o600, Exclusive)
	}
	return release, err
}
