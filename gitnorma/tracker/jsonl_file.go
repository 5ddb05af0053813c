package tracker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// fileID tells one version of a file from another ("" when it cannot): a rewrite makes a new
// inode, and an edit in place changes the size or a timestamp.
func fileID(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d %d %d %d %d\n", st.Dev, st.Ino, fi.Size(), st.Mtim.Nano(), st.Ctim.Nano())
}

// sameContent says the file versions a and b (fileID) hold the same bytes as far as their
// stat tells: the same inode, size and modification time. A change of its ctime alone (a hard
// link made or removed: the guard's second name for the backlog, a chmod) is none.
func sameContent(a, b string) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != 5 || len(fb) != 5 {
		return a == b
	}
	return slices.Equal(fa[:4], fb[:4])
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
		switch {
		case err == nil || f.err != nil:
		case conflictMarker(l.raw):
			f.err = fmt.Errorf("%s:%d: an unresolved merge conflict (%.7s): keep one version of each task, remove the markers, and git add the file", f.path, l.no, l.raw)
		default:
			f.err = fmt.Errorf("%s:%d: malformed task record: %w (fix or remove the line)", f.path, l.no, err)
		}
		l.rec, l.parsed = rec, true
	}
	return l.rec
}

// conflictMarker says raw is a line git leaves where a merge conflicted.
func conflictMarker(raw []byte) bool {
	for _, m := range []string{"<<<<<<< ", "=======", ">>>>>>> ", "||||||| "} {
		if bytes.HasPrefix(raw, []byte(m)) {
			return true
		}
	}
	return false
}

// find returns the task with id. Only lines holding the quoted id are decoded (found with one
// search of the whole file, not one per line), every one of them: a second line with the id (a
// merge that kept two versions) is then decoded too, and the read fails on it (checkUnique).
// An id spelled with JSON escapes does not show literally, so a miss looks at every line
// before giving up.
func (f *issueFile) find(id string) *record {
	var found *record
	for i := range f.lines {
		if l := f.lines[i]; l.parsed && l.rec != nil && l.rec.wire.ID == id {
			found = l.rec
			break
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
		if i < 0 {
			continue
		}
		if rec := f.record(i); rec != nil && rec.wire.ID == id && found == nil {
			found = rec
		}
	}
	if found != nil {
		return found
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

// checkUnique fails f when two of its lines decoded so far hold the same task id: a merge that
// kept both versions of a task's line (a union merge driver, a conflict resolved by keeping
// both sides). Which one is right is for a person to say; until then the task would be
// selected from one line and closed in the other, so nothing reads or writes the backlog.
func (f *issueFile) checkUnique() {
	seen := make(map[string]*line, len(f.lines))
	for i := range f.lines {
		l := &f.lines[i]
		if !l.parsed || l.rec == nil {
			continue
		}
		if first, ok := seen[l.rec.wire.ID]; ok {
			if f.err == nil {
				f.err = duplicateID(f.path, l.rec.wire.ID, first.no, l.no, first.rec.wire.CreatedAt, l.rec.wire.CreatedAt)
			}
			return
		}
		seen[l.rec.wire.ID] = l
	}
}

// duplicateID is the error of a task id on two lines: two versions of one task (the same
// creation time), or two tasks numbered alike on two branches (children are numbered in order).
// Without a creation time on either line there is no telling, and the error says both.
func duplicateID(path, id string, first, second int, created1, created2 time.Time) error {
	switch {
	case created1.IsZero() && created2.IsZero():
		return fmt.Errorf("%s: task id %s is on lines %d and %d: if a merge kept two versions of one task, keep the right one and remove the other; if they are two tasks, give one of them an id no other task has", path, id, first, second)
	case created1.Equal(created2):
		return fmt.Errorf("%s: task %s is on lines %d and %d (a merge kept two versions of it): keep the right one and remove the other", path, id, first, second)
	}
	return fmt.Errorf("%s: two tasks have the id %s, on lines %d and %d (made on two branches, then merged): give one of them an id no other task has, in its line and in what names it", path, id, first, second)
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
	// A byte-order mark some editors put first is no part of the first line (it is not written
	// back: bd writes none).
	data := bytes.TrimPrefix(buf.Bytes(), []byte("\uFEFF"))
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

// errChangedMeanwhile: the file is no longer the version an update read.
var errChangedMeanwhile = errors.New("the backlog file changed while git-norma wrote it (an editor's save, a git pull?): try again")

// save replaces the file atomically: a crash leaves either the old or the new backlog, never a
// torn one, because the synced temp file is renamed over the original in the same directory.
// It does not if the file is no longer read, the version read (errChangedMeanwhile).
func (j *JSONL) save(f *issueFile, read string) error {
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
	written, err := writeAtomic(j.path, lines, func() bool {
		now := "" // absent
		if fi, err := os.Stat(j.path); err == nil {
			now = fileID(fi)
		}
		return sameContent(now, read)
	})
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
// never joined into a copy of the whole backlog. unchanged, asked last before the rename,
// says the file there is still the one the lines were made from.
func writeAtomic(path string, lines [][]byte, unchanged func() bool) (_ fs.FileInfo, err error) {
	// A link there, or as its directory (.beads), is refused, not replaced (the backlog it
	// names would miss every change) nor written through (a link a pull brought in would have
	// git-norma write outside the repository).
	for _, p := range []string{path, filepath.Dir(path)} {
		if st, err := os.Lstat(p); err == nil && st.Mode().Type() == fs.ModeSymlink {
			return nil, fmt.Errorf("%s is a symbolic link: git-norma writes the backlog only as a regular file in the checkout; put the file (or directory) it names in its place", p)
		}
	}
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
	if err == nil && !unchanged() {
		return nil, errChangedMeanwhile
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
