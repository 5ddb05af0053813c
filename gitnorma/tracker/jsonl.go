package tracker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
)

// JSONL is the embedded backend for machines without bd. It keeps tasks in bd's JSONL export
// format (.beads/issues.jsonl) so `bd import` can adopt them later, and it preserves whatever a
// real bd wrote there: unknown fields and non-issue lines survive every rewrite.
//
// Each operation opens the files afresh under a flock, so a JSONL value is safe for
// concurrent use and several processes can share one backlog.
type JSONL struct {
	path     string
	lockPath string
	prefix   string
	now      func() time.Time
	// random is where new ids' characters come from (crypto/rand; a test forces collisions).
	random io.Reader
	// indexPath and verify are the index of heads and how it decides HasVerify (WithIndex;
	// without it, no task has a Verify command).
	indexPath string
	verify    VerifyFunc
}

var _ Tracker = (*JSONL)(nil)

// NewJSONL returns a backend over path (normally .beads/issues.jsonl). lockPath serializes
// writers; it is created on first use. prefix starts new top-level ids, as bd's issue-prefix.
func NewJSONL(path, lockPath, prefix string) *JSONL {
	return &JSONL{path: path, lockPath: lockPath, prefix: prefix, now: time.Now, random: rand.Reader, verify: noVerify}
}

// Create validates t, assigns a bd-style id and appends the task to the file.
func (j *JSONL) Create(ctx context.Context, t NewTask) (Task, error) {
	rec, err := newRecord(t)
	if err != nil {
		return Task{}, err
	}
	if t.Parent == "" && !ValidPrefix(j.prefix) {
		return Task{}, fmt.Errorf("invalid task id prefix %q: use lowercase letters, digits and inner dashes", j.prefix)
	}
	err = j.update(ctx, func(f *issueFile) error {
		id, err := j.assignID(f, t.Parent)
		if err != nil {
			return err
		}
		rec.setID(id, t.Parent, t.Actor, bump(j.now(), time.Time{}))
		f.lines = append(f.lines, line{rec: rec, parsed: true})
		return nil
	})
	if err != nil {
		return Task{}, err
	}
	return rec.task(), nil
}

func (j *JSONL) assignID(f *issueFile, parent string) (string, error) {
	if parent != "" && f.find(parent) == nil {
		return "", fmt.Errorf("parent task %s: %w", parent, ErrNotFound)
	}
	var ids []string
	for _, rec := range f.records() {
		ids = append(ids, rec.wire.ID)
	}
	if parent == "" {
		return newTopID(j.random, j.prefix, ids)
	}
	return nextChildID(parent, ids), nil
}

// Get returns the task with the given id.
func (j *JSONL) Get(ctx context.Context, id string) (Task, error) {
	tasks, err := j.GetMany(ctx, []string{id})
	if err != nil {
		return Task{}, err
	}
	return tasks[0], nil
}

// GetMany returns the tasks with ids, in that order, from one read of the file: a page of them
// is looked for one by one (each search goes through the whole file), more are read by
// decoding every record once.
func (j *JSONL) GetMany(ctx context.Context, ids []string) ([]Task, error) {
	out := make([]Task, 0, len(ids))
	err := j.view(ctx, func(f *issueFile) error {
		var byID map[string]*record
		if len(ids) > manyIDs {
			byID = make(map[string]*record, len(f.lines))
			for _, rec := range f.records() {
				byID[rec.wire.ID] = rec
			}
		}
		for _, id := range ids {
			rec := byID[id]
			if byID == nil {
				rec = f.find(id)
			}
			if rec == nil {
				return fmt.Errorf("task %s: %w", id, ErrNotFound)
			}
			out = append(out, rec.task())
		}
		return nil
	})
	return out, err
}

// manyIDs is where GetMany stops searching the file once per task: a search goes through the
// whole file, and past about 250 of them decoding every record once costs less (measured with
// 10,000 and 50,000 tasks: 0.3 and 2 ms a search, 0.1 and 0.5 s to decode all).
const manyIDs = 200

// List returns every task in file order; a missing file is an empty backlog.
func (j *JSONL) List(ctx context.Context) ([]Task, error) {
	var out []Task
	err := j.Scan(ctx, func(t Task) bool {
		out = append(out, t)
		return true
	})
	return out, err
}

// Scan calls fn with each task in file order until fn returns false, decoding only the records
// it reaches.
func (j *JSONL) Scan(ctx context.Context, fn func(Task) bool) error {
	return j.view(ctx, func(f *issueFile) error {
		for i := range f.lines {
			if rec := f.record(i); rec != nil && !fn(rec.task()) {
				break
			}
		}
		return nil
	})
}

// SetStatus moves a task to status, keeping bd's invariant that closed_at is set exactly when
// the status is closed. reason is recorded only when closing.
func (j *JSONL) SetStatus(ctx context.Context, id, status, reason string) error {
	if !ValidStatus(status) {
		return fmt.Errorf("invalid status %q: use open, in_progress, blocked, deferred or closed", status)
	}
	return j.updateTask(ctx, id, func(rec *record, now time.Time) error {
		rec.setStatus(status, reason, now)
		return nil
	})
}

// view runs fn on a snapshot of the file under a shared lock. Lines are decoded as fn reads
// them: a Get decodes the lines that can hold its task, a List all of them.
func (j *JSONL) view(ctx context.Context, fn func(*issueFile) error) error {
	return j.locked(ctx, flock.Shared, func(f *issueFile, _ string) error { return fn(f) })
}

// update runs a whole read-modify-write under the exclusive lock, so concurrent writers never
// lose each other's changes. Nothing is written when fn fails.
// Someone who takes no lock (an editor's save, a git pull) may replace the file meanwhile:
// the update is made again on their version rather than written over it.
func (j *JSONL) update(ctx context.Context, fn func(*issueFile) error) error {
	for attempt := 1; ; attempt++ {
		err := j.locked(ctx, flock.Exclusive, func(f *issueFile, id string) error {
			if !j.checkedBefore(id) {
				f.records()
				f.checkUnique()
			}
			if err := fn(f); err != nil || f.err != nil {
				return err
			}
			return j.save(f, id)
		})
		if !errors.Is(err, errChangedMeanwhile) || attempt == 3 {
			return err
		}
	}
}

// updateTask is update of the task with id, given the time to record as its update.
func (j *JSONL) updateTask(ctx context.Context, id string, fn func(rec *record, now time.Time) error) error {
	return j.update(ctx, func(f *issueFile) error {
		rec := f.find(id)
		if rec == nil {
			return fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		return fn(rec, bump(j.now(), rec.wire.UpdatedAt))
	})
}

// locked runs fn on the file, and the version of it read, under the lock how. A malformed line
// among those fn read, or a task id on two of them, fails it, whatever fn returned.
func (j *JSONL) locked(ctx context.Context, how int, fn func(*issueFile, string) error) error {
	unlock, err := j.lock(ctx, how)
	if err != nil {
		return err
	}
	defer unlock()
	f, id, err := j.load()
	if err != nil {
		return err
	}
	err = fn(f, id)
	f.checkUnique() // among the lines fn decoded
	if f.err != nil {
		return f.err
	}
	return err
}

// lock takes the backlog's flock (flock.Shared or flock.Exclusive) and returns its release.
// flock belongs to the open file, so two *JSONL values in one process exclude each other.
func (j *JSONL) lock(ctx context.Context, how int) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(j.lockPath), 0o755); err != nil {
		return nil, fmt.Errorf("create lock directory: %w", err)
	}
	unlock, err := flock.Acquire(ctx, j.lockPath, 0o644, how)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", j.lockPath, err)
	}
	return unlock, nil
}
