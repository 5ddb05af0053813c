package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/loop"
)

// RunLock is an exclusive lock held while working: one per task (.norma/locks/task-<id>.lock)
// for a run or landing of it. It is an flock, which the kernel releases however the holder
// dies: never stale. The file says who holds it, for messages and `status`.
type RunLock struct {
	f *os.File
	// Previous is the record a holder that died left (zero after a clean release).
	Previous LockHolder
}

// LockHolder is what the lock file records about its holder: for a task's lock, the run a
// live process is executing (status's live runs).
type LockHolder struct {
	RunID string `json:"run_id"`
	// TaskID is the task whose lock it holds, from the lock file's name (LiveRuns).
	TaskID  string    `json:"task_id,omitempty"`
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// What names the holder: its run, or, for a check (the post-commit hook's) or a run waiting
// for its turn, which hold the task's lock under no run id, the process; and the task.
func (h LockHolder) What() string {
	what := "run " + h.RunID
	if h.RunID == "" {
		what = "a git norma process"
	}
	if h.TaskID != "" {
		what += " on task " + h.TaskID
	}
	return what
}

// ErrLocked means another live git-norma process holds the lock.
var ErrLocked = errors.New("another git norma run is in progress in this repository")

// TaskLockPath is the lock of one task's runs.
func (r *Repo) TaskLockPath(taskID string) string {
	return r.Path("locks", "task-"+taskID+".lock")
}

// acquireTaskLock takes a task's lock without waiting: two runs never work on one task.
func (r *Repo) acquireTaskLock(taskID string) (*RunLock, error) {
	return acquireLock(r.TaskLockPath(taskID), "another git norma run is working on task "+taskID)
}

func acquireLock(path, busy string) (*RunLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedError(path, busy)
		}
		return nil, err
	}
	l := &RunLock{f: f}
	l.Previous, _ = ReadLockHolder(path)
	// Say who holds it at once, so a second process never reads an empty or stale record.
	if err := l.Record("", time.Now()); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// lockedError names the holder when its record is readable, and only then suggests a kill.
func lockedError(path, busy string) error {
	h, err := ReadLockHolder(path)
	if err != nil || h.PID <= 0 {
		return &Error{Err: lockError(busy + " (held by another git norma process)"),
			Hint: "wait for it to finish; git norma status shows the live runs"}
	}
	return &Error{
		Err:  lockError(fmt.Sprintf("%s (%s, pid %d on %s, since %s)", busy, h.What(), h.PID, h.Host, h.Started.Format(time.RFC3339))),
		Hint: fmt.Sprintf("wait for it to finish, or stop it with: kill -INT %d", h.PID)}
}

// lockError is a refusal to take a held lock; errors.Is(err, ErrLocked) holds.
type lockError string

func (e lockError) Error() string { return string(e) }

func (e lockError) Unwrap() error { return ErrLocked }

// LiveRuns lists the runs live processes hold task locks for, newest first.
func (r *Repo) LiveRuns() []LockHolder {
	paths, _ := filepath.Glob(r.Path("locks", "task-*.lock"))
	var live []LockHolder
	for _, p := range paths {
		if h, ok := LiveLockHolder(p); ok {
			h.TaskID = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "task-"), ".lock")
			live = append(live, h)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Started.After(live[j].Started) })
	return live
}

// Record writes the holder's identity into the lock file.
func (l *RunLock) Record(runID string, now time.Time) error {
	host, _ := os.Hostname()
	data, _ := json.Marshal(LockHolder{PID: os.Getpid(), Host: host, RunID: runID, Started: now.UTC()})
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt(data, 0)
	return err
}

// Release empties and unlocks the lock file.
func (l *RunLock) Release() {
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}

// ReadLockHolder reads who holds (or last held) the lock.
func ReadLockHolder(path string) (LockHolder, error) {
	var h LockHolder
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return h, err
	}
	return h, json.Unmarshal(data, &h)
}

// LiveLockHolder returns the holder if a live process holds the lock right now.
func LiveLockHolder(path string) (LockHolder, bool) {
	f, err := os.Open(path)
	if err != nil {
		return LockHolder{}, false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return LockHolder{}, false
	}
	h, _ := ReadLockHolder(path) // held is held, even when the record cannot be read
	return h, true
}

// unconfinedTurn waits, saying so, until no other run with unconfined agents is under way,
// and returns the turn's release. Unconfined agents take turns: a step's fallback guard
// compares the shared places with its snapshot, and one taken while another run's agent had
// changed them would put that change back after the other's guard undid it. The turn locks
// the .norma directory itself: an unconfined agent could delete a lock file.
func (r *Repo) unconfinedTurn(ctx context.Context, live loop.LiveFunc, taskID string) (func(), error) {
	now, cancel := context.WithCancel(ctx)
	cancel() // a first try that does not wait
	release, err := flock.Acquire(now, r.Path(), 0, flock.Exclusive)
	if err == nil || !errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return release, err
	}
	say(live, taskID, "waiting for another run's unconfined agents to finish: without Landlock, runs take turns")
	release, err = flock.Acquire(ctx, r.Path(), 0, flock.Exclusive)
	if errors.Is(err, context.Canceled) {
		err = turnInterrupted{err}
	}
	return release, err
}

// turnInterrupted says that an interrupt came before anything of the run started (a bare
// "context canceled" left the user wondering what of it was left); it is still an interrupt.
type turnInterrupted struct{ err error }

func (turnInterrupted) Error() string {
	return "interrupted while it waited for its turn, before the run started: the task is as it was"
}
func (e turnInterrupted) Unwrap() error { return e.err }

// liveTasks are the tasks whose lock a live process holds: a run, its landing (which may move
// the task branch after the run's end is recorded), or git norma land.
func (r *Repo) liveTasks() map[string]bool {
	out := map[string]bool{}
	paths, _ := filepath.Glob(r.Path("locks", "task-*.lock"))
	for _, p := range paths {
		if _, ok := LiveLockHolder(p); ok {
			out[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "task-"), ".lock")] = true
		}
	}
	return out
}
