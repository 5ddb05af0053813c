package tracker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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

// fileID tells one version of a file from another ("" when it cannot): a rewrite makes a new
// inode, and an edit in place changes the size or a timestamp.
func fileID(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d %d %d %d %d\n", st.Dev, st.Ino, fi.Size(), st.Mtim.Nano(), st.Ctim.Nano())
}

// checkedBefore says whether id is the file as git-norma last wrote it, every line valid: an
// update then decodes only the lines it needs, where any other file is checked whole first,
// so a malformed line is reported rather than carried along. Any edit by hand or by bd
// changes the file's size, times or inode.
func (j *JSONL) checkedBefore(id string) bool {
	data, err := os.ReadFile(j.checkedPath())
	return id != "" && err == nil && string(data) == id
}

// checkedPath holds that identity beside the lock (.norma/locks/tasks.checked), written and
// read under the exclusive lock, so that no process decodes 10,000 records to learn what the
// previous one knew. It is a hint: a stale one never matches.
func (j *JSONL) checkedPath() string {
	return strings.TrimSuffix(j.lockPath, ".lock") + ".checked"
}

var _ Tracker = (*JSONL)(nil)

// NewJSONL returns a backend over path (normally .beads/issues.jsonl). lockPath serializes
// writers; it is created on first use. prefix starts new top-level ids, as bd's issue-prefix.
func NewJSONL(path, lockPath, prefix string) *JSONL {
	return &JSONL{path: path, lockPath: lockPath, prefix: prefix, now: time.Now, random: rand.Reader, verify: noVerify}
}

// line is one line of the file, decoded on first use; foreign (non-issue) lines have rec ==
// nil once parsed.
type line struct {
	raw    []byte
	no     int // 1-based, for errors
	start  int // offset of raw in the file as read (lines added since are parsed)
	rec    *record
	parsed bool
}

// issueFile is the backlog as read, its lines decoded only when asked for: an update of one
// task (a run's, after every step) costs what its task costs, not what the file holds.
type issueFile struct {
	path string
	// data is the file as read; lines[:read] are its lines, in order.
	data  []byte
	read  int
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

// find returns the task with id. Only lines holding the quoted id are decoded (found with one
// search of the whole file, not one per line); an id spelled with JSON escapes does not show
// literally, so a miss looks at every line before giving up.
func (f *issueFile) find(id string) *record {
	for i := range f.lines {
		if l := f.lines[i]; l.parsed && l.rec != nil && l.rec.wire.ID == id {
			return l.rec
		}
	}
	quoted := []byte(`"` + id + `"`)
	for from := 0; ; {
		k := bytes.Index(f.data[from:], quoted)
		if k < 0 {
			break
		}
		pos := from + k
		from = pos + len(quoted)
		i := sort.Search(f.read, func(i int) bool { return f.lines[i].start > pos }) - 1
		if i < 0 || f.lines[i].parsed {
			continue
		}
		if rec := f.record(i); rec != nil && rec.wire.ID == id {
			return rec
		}
	}
	for _, rec := range f.records() {
		if rec.wire.ID == id {
			return rec
		}
	}
	return nil
}

// get is find for an id that must exist.
func (f *issueFile) get(id string) (*record, error) {
	if rec := f.find(id); rec != nil {
		return rec, nil
	}
	return nil, fmt.Errorf("task %s: %w", id, ErrNotFound)
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
				return nil
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
func (j *JSONL) update(ctx context.Context, fn func(*issueFile) error) error {
	return j.locked(ctx, flock.Exclusive, func(f *issueFile, id string) error {
		if !j.checkedBefore(id) {
			f.records()
		}
		if err := fn(f); err != nil || f.err != nil {
			return err
		}
		return j.save(f)
	})
}

// updateTask is update of the task with id, given the time to record as its update.
func (j *JSONL) updateTask(ctx context.Context, id string, fn func(rec *record, now time.Time) error) error {
	return j.update(ctx, func(f *issueFile) error {
		rec, err := f.get(id)
		if err != nil {
			return err
		}
		return fn(rec, bump(j.now(), rec.wire.UpdatedAt))
	})
}

// locked runs fn on the file, and the version of it read, under the lock how. A malformed line
// among those fn read fails it, whatever fn returned.
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

// load reads the file and tells which version of it was read.
func (j *JSONL) load() (*issueFile, string, error) {
	file, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &issueFile{path: j.path}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read tasks: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("read tasks: %w", err)
	}
	// One read into a buffer of the file's size, and lines as slices of it: a run updates its
	// task after every step, and with 10,000 tasks growing buffers and per-line copies were a
	// third of what an update cost.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(file); err != nil {
		return nil, "", fmt.Errorf("read tasks: %w", err)
	}
	data := buf.Bytes()
	f := &issueFile{path: j.path, data: data, lines: make([]line, 0, bytes.Count(data, []byte("\n"))+1)}
	no, start := 0, 0
	for raw := range bytes.Lines(data) {
		no++
		if len(bytes.TrimSpace(raw)) > 0 {
			f.lines = append(f.lines, line{raw: bytes.TrimSuffix(raw, []byte("\n")), no: no, start: start})
		}
		start += len(raw)
	}
	f.read = len(f.lines)
	return f, fileID(fi), nil
}

// save replaces the file atomically: a crash leaves either the old or the new backlog, never a
// torn one, because the synced temp file is renamed over the original in the same directory.
func (j *JSONL) save(f *issueFile) error {
	lines := make([][]byte, len(f.lines))
	for i, l := range f.lines {
		lines[i] = l.raw
		if l.rec != nil && (l.rec.dirty || l.raw == nil) {
			var err error
			if lines[i], err = l.rec.marshal(); err != nil {
				return fmt.Errorf("encode task %s: %w", l.rec.wire.ID, err)
			}
		}
	}
	written, err := writeAtomic(j.path, lines)
	if err != nil {
		return err
	}
	// Every line written was decoded valid, marshalled here, or kept from a file checked whole.
	// (Only if the file there now is the one written: someone may have replaced it since.)
	if fi, err := os.Stat(j.path); err == nil && os.SameFile(fi, written) {
		_ = os.WriteFile(j.checkedPath(), []byte(fileID(fi)), 0o644)
	}
	return nil
}

// writeAtomic replaces path with lines, each ended by a newline, through a synced temporary
// file, and returns the file it wrote (nil if unknown). The lines go out through one buffer,
// never joined into a copy of the whole backlog.
func writeAtomic(path string, lines [][]byte) (_ fs.FileInfo, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write tasks: %w", err)
	}
	defer func() {
		if err != nil { // once renamed there is nothing left to remove
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 256<<10)
	for _, l := range lines {
		w.Write(l) // a failed write fails every later one, and Flush
		w.WriteByte('\n')
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	written, _ := tmp.Stat()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return nil, fmt.Errorf("write tasks: %w", err)
	}
	// Syncing the directory makes the rename durable; some filesystems refuse, which is harmless.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return written, nil
}
