package tracker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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

	// written identifies the file as this value last wrote it, every line valid. An update
	// that finds the file still so decodes only the lines it needs; any other file is checked
	// whole first, so a malformed line is reported rather than carried along.
	mu      sync.Mutex
	written fileID
}

// fileID tells one version of a file from another: a rewrite makes a new inode, and an edit
// in place changes the size or a timestamp.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// checkedBefore says whether id is the file as this value last wrote it.
func (j *JSONL) checkedBefore(id fileID) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return id != fileID{} && id == j.written
}

func (j *JSONL) remember(id fileID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.written = id
}

var _ Tracker = (*JSONL)(nil)

// NewJSONL returns a backend over path (normally .beads/issues.jsonl). lockPath serializes
// writers; it is created on first use. prefix starts new top-level ids, as bd's issue-prefix.
func NewJSONL(path, lockPath, prefix string) *JSONL {
	return &JSONL{path: path, lockPath: lockPath, prefix: prefix, now: time.Now}
}

// line is one line of the file, decoded on first use; foreign (non-issue) lines have rec ==
// nil once parsed.
type line struct {
	raw    []byte
	no     int // 1-based, for errors
	rec    *record
	parsed bool
}

// issueFile is the backlog as read. Lines are decoded only when asked for: an update of one
// task decodes the lines that can hold it, so what it costs does not grow with the notes of
// every other task in the file (a run updates its task after every step).
type issueFile struct {
	path  string
	lines []line
	// err is the first malformed line decoded; an operation that met one fails, writing nothing.
	err error
}

// record decodes line i once.
func (f *issueFile) record(i int) *record {
	l := &f.lines[i]
	if !l.parsed {
		rec, err := parseLine(l.raw)
		if err != nil && f.err == nil {
			f.err = fmt.Errorf("%s:%d: malformed task record: %w (fix or remove the line)", f.path, l.no, err)
		}
		l.rec, l.parsed = rec, true
	}
	return l.rec
}

// find returns the task with id. Only lines holding the quoted id are decoded; an id spelled
// with JSON escapes does not show literally, so a miss looks at every line before giving up.
func (f *issueFile) find(id string) *record {
	quoted := []byte(`"` + id + `"`)
	for i := range f.lines {
		if f.lines[i].parsed || bytes.Contains(f.lines[i].raw, quoted) {
			if rec := f.record(i); rec != nil && rec.wire.ID == id {
				return rec
			}
		}
	}
	for _, rec := range f.records() {
		if rec.wire.ID == id {
			return rec
		}
	}
	return nil
}

// records decodes every line and returns the tasks in file order.
func (f *issueFile) records() []*record {
	var out []*record
	for i := range f.lines {
		if rec := f.record(i); rec != nil {
			out = append(out, rec)
		}
	}
	return out
}

func (f *issueFile) ids() []string {
	var ids []string
	for _, rec := range f.records() {
		ids = append(ids, rec.wire.ID)
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
		f.lines = append(f.lines, line{rec: rec, parsed: true})
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
		for _, rec := range f.records() {
			out = append(out, rec.task())
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

// view runs fn on a snapshot of the file under a shared lock. Lines are decoded as fn reads
// them: a Get decodes the lines that can hold its task, a List all of them.
func (j *JSONL) view(ctx context.Context, fn func(*issueFile) error) error {
	unlock, err := lockFile(ctx, j.lockPath, lockShared)
	if err != nil {
		return err
	}
	defer unlock()
	f, _, err := j.load()
	if err != nil {
		return err
	}
	err = fn(f)
	if f.err != nil { // a malformed line among those fn read
		return f.err
	}
	return err
}

// update runs a whole read-modify-write under the exclusive lock, so concurrent writers never
// lose each other's changes. Nothing is written when fn fails.
func (j *JSONL) update(ctx context.Context, fn func(*issueFile) error) error {
	unlock, err := lockFile(ctx, j.lockPath, lockExclusive)
	if err != nil {
		return err
	}
	defer unlock()
	f, id, err := j.load()
	if err != nil {
		return err
	}
	if !j.checkedBefore(id) {
		f.records()
	}
	err = fn(f)
	if f.err != nil {
		return f.err
	}
	if err != nil {
		return err
	}
	return j.save(f)
}

// load reads the file and tells which version of it was read.
func (j *JSONL) load() (*issueFile, fileID, error) {
	file, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &issueFile{path: j.path}, fileID{}, nil
	}
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read tasks: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read tasks: %w", err)
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("read tasks: %w", err)
	}
	f := &issueFile{path: j.path}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) > 0 {
			f.lines = append(f.lines, line{raw: raw, no: i + 1})
		}
	}
	return f, idOf(fi), nil
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
	written, err := writeAtomic(j.path, buf.Bytes())
	if err != nil {
		return err
	}
	// Every line written was decoded valid, marshalled here, or kept from a file checked whole.
	// (Only if the file there now is the one written: someone may have replaced it since.)
	if fi, err := os.Stat(j.path); err == nil && idOf(fi).ino == written.ino && idOf(fi).dev == written.dev {
		j.remember(idOf(fi))
	}
	return nil
}

// writeAtomic replaces path with data through a synced temporary file and returns the
// identity of the file it wrote.
func writeAtomic(path string, data []byte) (_ fileID, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fileID{}, fmt.Errorf("create %s: %w", dir, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fileID{}, fmt.Errorf("write tasks: %w", err)
	}
	defer func() {
		if err != nil { // once renamed there is nothing left to remove
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	var written fileID
	if fi, serr := tmp.Stat(); serr == nil {
		written = idOf(fi)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fileID{}, fmt.Errorf("write tasks: %w", err)
	}
	syncDir(dir)
	return written, nil
}

// syncDir makes the rename durable; some filesystems refuse directory fsync, which is harmless.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
