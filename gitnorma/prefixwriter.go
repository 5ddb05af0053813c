package gitnorma

import (
	"bytes"
	"io"
	"sync"
)

// prefixWriter tags each whole line with a prefix before passing it on, so the live lines of
// parallel runs stay readable when they interleave. Writes of one line are passed on whole.
type prefixWriter struct {
	mu     sync.Mutex
	out    io.Writer
	prefix []byte
	buf    []byte
}

func newPrefixWriter(out io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{out: out, prefix: []byte(prefix)}
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := append(append([]byte(nil), w.prefix...), w.buf[:i+1]...)
		w.buf = w.buf[i+1:]
		if _, err := w.out.Write(line); err != nil {
			return len(p), err
		}
	}
}
