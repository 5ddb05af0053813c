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
	return acquire(ctx, path, perm, how, nil)
}

// acquire is Acquire, calling busy (when not nil) before it waits for another holder.
func acquire(ctx context.Context, path string, perm os.FileMode, how int, busy func()) (func(), error) {
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
	if busy != nil {
		busy()
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
	return WaitFor(ctx, path, "", nil)
}

// WaitFor is Wait for a lock people wait on: holder says who takes it (kept beside the lock,
// in HolderPath), and busy, when another holds it, is called before the wait.
func WaitFor(ctx context.Context, path, holder string, busy func()) (func(), error) {
	release, err := wait(ctx, path, Exclusive, busy)
	if err == nil && holder != "" {
		// Renamed into place: a link left there is replaced, never written through.
		if f, err := os.CreateTemp(filepath.Dir(path), ".holder-*"); err == nil {
			_, werr := f.WriteString(holder)
			if f.Close() != nil || werr != nil || os.Rename(f.Name(), HolderPath(path)) != nil {
				os.Remove(f.Name())
			}
		}
	}
	return release, err
}

// WaitShared is Wait for the shared lock: busy, when an exclusive holder has it, is called
// before the wait.
func WaitShared(ctx context.Context, path string, busy func()) (func(), error) {
	return wait(ctx, path, Shared, busy)
}

// wait takes the lock how at path, making its directory when missing.
func wait(ctx context.Context, path string, how int, busy func()) (func(), error) {
	release, err := acquire(ctx, path, 0o600, how, busy)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		release, err = acquire(ctx, path, 0o600, how, busy)
	}
	return release, err
}

// HolderPath is where WaitFor keeps who took the lock at path last: while the lock is held,
// its holder.
func HolderPath(path string) string { return path + ".holder" }
