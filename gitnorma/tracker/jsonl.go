package tracker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
}

var _ Tracker = (*JSONL)(nil)

// NewJSONL returns a backend over path (normally .beads/issues.jsonl). lockPath serializes
// writers; it is created on first use. prefix starts new top-level ids, as bd's issue-prefix.
func NewJSONL(path, lockPath, prefix string) *JSONL {
	return &JSONL{path: path, lockPath: lockPath, prefix: prefix, now: time.Now}
}

// line is one line of the file; foreign (non-issue) lines have rec == nil.
type line struct {
	raw []byte
	rec *record
}

type issueFile struct{ lines []line }

func (f *issueFile) find(id string) *record {
	for _, l := range f.lines {
		if l.rec != nil && l.rec.wire.ID == id {
			return l.rec
		}
	}
	return nil
}

func (f *issueFile) ids() []string {
	var ids []string
	for _, l := range f.lines {
		if l.rec != nil {
			ids = append(ids, l.rec.wire.ID)
		}
	}
	return ids
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
		f.lines = append(f.lines, line{rec: rec})
		return nil
	})
	if err != nil {
		return Task{}, err
	}
	return rec.task(), nil
}

func (j *JSONL) assignID(f *issueFile, parent string) (string, error) {
	if parent == "" {
		return newTopID(j.prefix, f.ids())
	}
	if f.find(parent) == nil {
		return "", fmt.Errorf("parent task %s: %w", parent, ErrNotFound)
	}
	return nextChildID(parent, f.ids()), nil
}

// Get returns the task with the given id.
func (j *JSONL) Get(ctx context.Context, id string) (Task, error) {
	var out Task
	err := j.view(ctx, func(f *issueFile) error {
		rec := f.find(id)
		if rec == nil {
			return fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		out = rec.task()
		return nil
	})
	return out, err
}

// List returns every task in file order; a missing file is an empty backlog.
func (j *JSONL) List(ctx context.Context) ([]Task, error) {
	var out []Task
	err := j.view(ctx, func(f *issueFile) error {
		for _, l := range f.lines {
			if l.rec != nil {
				out = append(out, l.rec.task())
			}
		}
		return nil
	})
	return out, err
}

// SetStatus moves a task to status, keeping bd's invariant that closed_at is set exactly when
// the status is closed. reason is recorded only when closing.
func (j *JSONL) SetStatus(ctx context.Context, id, status, reason string) error {
	if !ValidStatus(status) {
		return fmt.Errorf("invalid status %q: use open, in_progress, blocked, deferred or closed", status)
	}
	return j.update(ctx, func(f *issueFile) error {
		rec := f.find(id)
		if rec == nil {
			return fmt.Errorf("task %s: %w", id, ErrNotFound)
		}
		rec.setStatus(status, reason, bump(j.now(), rec.wire.UpdatedAt))
		return nil
	})
}

// view runs fn on a snapshot of the file under a shared lock.
func (j *JSONL) view(ctx context.Context, fn func(*issueFile) error) error {
	unlock, err := lockFile(ctx, j.lockPath, lockShared)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := j.load()
	if err != nil {
		return err
	}
	return fn(f)
}

// update runs a whole read-modify-write under the exclusive lock, so concurrent writers never
// lose each other's changes. Nothing is written when fn fails.
func (j *JSONL) update(ctx context.Context, fn func(*issueFile) error) error {
	unlock, err := lockFile(ctx, j.lockPath, lockExclusive)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := j.load()
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	return j.save(f)
}

func (j *JSONL) load() (*issueFile, error) {
	data, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &issueFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tasks: %w", err)
	}
	f := &issueFile{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		rec, err := parseLine(raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: malformed task record: %w (fix or remove the line)", j.path, i+1, err)
		}
		f.lines = append(f.lines, line{raw: raw, rec: rec})
	}
	return f, nil
}

// save replaces the file atomically: a crash leaves either the old or the new backlog, never a
// torn one, because the synced temp file is renamed over the original in the same directory.
func (j *JSONL) save(f *issueFile) error {
	var buf bytes.Buffer
	for _, l := range f.lines {
		b := l.raw
		if l.rec != nil && (l.rec.dirty || b == nil) {
			var err error
			if b, err = l.rec.marshal(); err != nil {
				return fmt.Errorf("encode task %s: %w", l.rec.wire.ID, err)
			}
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return writeAtomic(j.path, buf.Bytes())
}

func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write tasks: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write tasks: %w", err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes the rename durable; some filesystems refuse directory fsync, which is harmless.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
