package tracker

import (
	"encoding/binary"
	"errors"
	"time"
)

// The index file's encoding: a header line, then the identity of the file the index was made
// from and every line of it as [key, kind, head fields...], numbers as varints and strings as
// length and bytes. Decoding keeps one copy of the file as a string and slices every string
// of every head out of it: choosing among 10,000 tasks allocates a few objects per task at
// most, and leaves the garbage collector next to nothing (with encoding/gob, a third of a
// `next` was collection).
const headIndexMagic = "git-norma backlog heads\n"

var errIndexFormat = errors.New("not a backlog heads index")

func encodeIndex(idx headIndex) []byte {
	b := append([]byte(headIndexMagic), byte(idx.Version))
	b = appendString(b, idx.File)
	b = binary.AppendUvarint(b, uint64(len(idx.Lines)))
	for _, l := range idx.Lines {
		b = append(b, l.Key[:]...)
		if l.Head == nil {
			b = append(b, 0)
			continue
		}
		h := l.Head
		b = append(b, 1)
		for _, s := range []string{h.ID, h.Title, h.Status, h.IssueType, h.Parent} {
			b = appendString(b, s)
		}
		b = binary.AppendVarint(b, int64(h.Priority))
		b = binary.AppendVarint(b, h.CreatedAt.UnixNano())
		b = append(b, boolByte(h.HasVerify)|boolByte(h.Ready)<<1|boolByte(h.HasChildren)<<2)
		b = binary.AppendUvarint(b, uint64(len(h.Labels)))
		for _, s := range h.Labels {
			b = appendString(b, s)
		}
		b = binary.AppendUvarint(b, uint64(len(h.Deps)))
		for _, d := range h.Deps {
			b = appendString(appendString(b, d.On), d.Type)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decodeIndex reads an index, and returns its heads in file order too; any flaw makes it
// unusable as a whole.
func decodeIndex(data []byte) (idx headIndex, heads []Head, err error) {
	s := string(data)
	if len(s) < len(headIndexMagic)+1 || s[:len(headIndexMagic)] != headIndexMagic {
		return idx, nil, errIndexFormat
	}
	d := indexDecoder{s: s, at: len(headIndexMagic)}
	idx.Version = int(d.byte())
	idx.File = d.string()
	idx.Lines = make([]indexedLine, d.count())
	heads = make([]Head, 0, len(idx.Lines))
	for i := range idx.Lines {
		copy(idx.Lines[i].Key[:], d.next(len(idx.Lines[i].Key)))
		if d.byte() == 0 {
			continue
		}
		h := Head{ID: d.string(), Title: d.string(), Status: d.string(), IssueType: d.string(), Parent: d.string()}
		h.Priority = int(d.varint())
		h.CreatedAt = time.Unix(0, d.varint()).UTC()
		flags := d.byte()
		h.HasVerify, h.Ready, h.HasChildren = flags&1 != 0, flags&2 != 0, flags&4 != 0
		if n := d.count(); n > 0 {
			h.Labels = make([]string, n)
			for k := range h.Labels {
				h.Labels[k] = d.string()
			}
		}
		if n := d.count(); n > 0 {
			h.Deps = make([]DepHead, n)
			for k := range h.Deps {
				h.Deps[k] = DepHead{On: d.string(), Type: d.string()}
			}
		}
		heads = append(heads, h)
		idx.Lines[i].Head = &heads[len(heads)-1]
	}
	if d.err || d.at != len(s) {
		return headIndex{}, nil, errIndexFormat
	}
	return idx, heads, nil
}

// indexDecoder reads from s at at; a read past the end sets err and yields zero values.
type indexDecoder struct {
	s   string
	at  int
	err bool
}

func (d *indexDecoder) byte() byte {
	if d.at >= len(d.s) {
		d.err = true
		return 0
	}
	d.at++
	return d.s[d.at-1]
}

func (d *indexDecoder) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		c := d.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 || d.err {
			return v
		}
	}
	d.err = true
	return 0
}

func (d *indexDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1) // zig-zag, as binary.AppendVarint writes
}

// count is a length that must fit in what is left of the index.
func (d *indexDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.at) {
		d.err = true
		return 0
	}
	return int(n)
}

func (d *indexDecoder) string() string {
	return d.next(d.count())
}

// next is the next n bytes.
func (d *indexDecoder) next(n int) string {
	if d.at+n > len(d.s) {
		d.err = true
		return ""
	}
	d.at += n
	return d.s[d.at-n : d.at]
}
