package tracker

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"

	"github.com/git-norma/git-norma/gitnorma/flock"
)

// headIndexVersion names the index's encoding and the meaning of its heads: change it with
// Head, headIndex, what the VerifyFunc git-norma passes decides, or which lines are tasks (3: a
// dependency without depends_on_id makes its line malformed; 4: a task id on two lines fails
// the read, which an index made before could not tell).
const headIndexVersion = 4

// headIndex is the index file: every line of the backlog, in file order, by a hash of its
// bytes, with its head (nil for a line that is not a task), and the identity of the file they
// were read from (see fileID).
type headIndex struct {
	Version int
	File    string
	Lines   []indexedLine
}

type indexedLine struct {
	Key  lineKey
	Head *Head
}

// lineKey identifies a line's bytes: a truncated SHA-256, so two different lines never
// share a head.
type lineKey [16]byte

func keyOf(raw []byte) lineKey {
	sum := sha256.Sum256(raw)
	return lineKey(sum[:16])
}

// WithIndex makes Heads keep an index of the backlog's heads in path (a cache: it may be
// removed at any time) and decide each task's HasVerify with verify.
func (j *JSONL) WithIndex(path string, verify VerifyFunc) *JSONL {
	j.indexPath, j.verify = path, verify
	return j
}

// Children returns a task's direct children, found in the heads: only their own lines are
// decoded.
func (j *JSONL) Children(ctx context.Context, id string) ([]Task, error) {
	heads, err := j.Heads(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, h := range heads {
		if h.Parent == id {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return j.GetMany(ctx, ids)
}

// Heads returns the head of every task, in file order. The index answers alone when the file
// is the one it was made from (see fileID). Otherwise only the lines the index does not know by
// their bytes are decoded, so any edit is seen and a malformed line reported, while 10,000
// unchanged tasks are not decoded again; the index is then written for the file as it is.
func (j *JSONL) Heads(ctx context.Context) ([]Head, error) {
	unlock, err := j.lock(ctx, flock.Shared)
	if err != nil {
		return nil, err
	}
	defer unlock()
	idx, indexed := j.readIndex()
	if fi, err := os.Stat(j.path); err == nil && idx != nil && idx.File == fileID(fi) {
		return indexed, nil
	}
	f, id, err := j.load()
	if err != nil {
		return nil, err
	}
	var known map[lineKey]*Head
	if idx != nil {
		known = make(map[lineKey]*Head, len(idx.Lines))
		for _, l := range idx.Lines {
			known[l.Key] = l.Head
		}
	}
	lines := make([]indexedLine, len(f.lines))
	heads := make([]Head, 0, len(f.lines)) // never grown: the lines point into it
	for i := range f.lines {
		lines[i].Key = keyOf(f.lines[i].raw)
		head, ok := known[lines[i].Key]
		if !ok {
			if rec := f.record(i); rec != nil {
				h := HeadOf(rec.task(), j.verify)
				head = &h
			}
			if f.err != nil {
				return nil, f.err
			}
		}
		if head != nil {
			heads = append(heads, *head)
			lines[i].Head = &heads[len(heads)-1]
		}
	}
	seen := make(map[string]int, len(heads))
	for i := range f.lines {
		if h := lines[i].Head; h != nil {
			if k, ok := seen[h.ID]; ok {
				return nil, duplicateID(f.path, h.ID, f.lines[k].no, f.lines[i].no, lines[k].Head.CreatedAt, h.CreatedAt)
			}
			seen[h.ID] = i
		}
	}
	MarkReady(heads)
	MarkChildren(heads)
	if j.indexPath != "" && id != "" {
		j.writeIndex(headIndex{Version: headIndexVersion, File: id, Lines: lines})
	}
	return heads, nil
}

// readIndex is the index and its heads in file order; nil when there is no usable one (or no
// indexPath, which no file has).
func (j *JSONL) readIndex() (*headIndex, []Head) {
	data, err := os.ReadFile(j.indexPath)
	if err != nil {
		return nil, nil
	}
	idx, heads, err := decodeIndex(data)
	if err != nil || idx.Version != headIndexVersion {
		return nil, nil
	}
	return &idx, heads
}

// writeIndex replaces the index (temp file and rename, not synced: a torn or lost index is
// only read again from the backlog). Failing to write it costs the next reader time, nothing
// else.
func (j *JSONL) writeIndex(idx headIndex) {
	dir := filepath.Dir(j.indexPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(j.indexPath)+".tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(encodeIndex(idx))
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), j.indexPath)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}
