package loop

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// DeniedEvent is the step event quoting the lines of a confined step's output that report an
// operation the kernel refused: the user learns what the agent tried without reading its logs.
const DeniedEvent = "sandbox_denied"

// deniedWords are how tools report EACCES and EPERM, the errors Landlock answers a forbidden
// write, connect or signal with: the C library's and Go's strerror, Python's and Node's.
var deniedWords = []string{"permission denied", "operation not permitted", "eacces", "eperm"}

// deniedScan bounds the scan: the tail of each log, where a failing agent's last words are.
const (
	deniedScan  = 1 << 20
	deniedQuote = 5
)

// deniedEvent scans the step's logs for refused operations; ok is false when there are none.
// The kernel does not tell an unprivileged process what it refused, so what the agent's tools
// printed is the evidence, quoted as such.
func deniedEvent(logs ...string) (Event, bool) {
	var quotes []string
	seen := map[string]bool{}
	sharedMemory := false
	for _, path := range logs {
		f, err := OpenRegular(path)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Size() > deniedScan {
			_, _ = f.Seek(-deniedScan, io.SeekEnd)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), deniedScan)
		for sc.Scan() {
			line := sc.Text()
			sharedMemory = sharedMemory || usesSharedMemory(line)
			at := deniedAt(line)
			if at < 0 {
				continue
			}
			q := quote(line, at)
			if seen[q] {
				continue
			}
			seen[q] = true
			if len(quotes) < deniedQuote {
				quotes = append(quotes, q)
			}
		}
		f.Close()
	}
	count := len(seen)
	if count == 0 {
		return Event{}, false
	}
	msg := fmt.Sprintf("the step's output reports %d refused operation(s), as the sandbox refuses writes outside the places a step may write: %s",
		count, strings.Join(quotes, " | "))
	if count > len(quotes) {
		msg += fmt.Sprintf(" | … %d more in the step's logs", count-len(quotes))
	}
	if sharedMemory {
		// Python names no path when sem_open fails: say which place it was.
		msg += " — shared memory (Python's multiprocessing, shm_open) needs /dev/shm, which confined processes write only when it is listed in sandbox.allow_write"
	}
	return Event{Type: DeniedEvent, Message: msg, Data: map[string]any{"count": count, "lines": quotes}}, true
}

// deniedAt is where a refusal is reported in line, or -1.
func deniedAt(line string) int {
	lower := strings.ToLower(line)
	for _, w := range deniedWords {
		if i := strings.Index(lower, w); i >= 0 && wordAt(lower, i, len(w)) {
			return i
		}
	}
	return -1
}

// wordAt says lower[i:i+n] stands alone (EPERM, not EPERMANENT).
func wordAt(lower string, i, n int) bool {
	isLetter := func(b byte) bool { return b >= 'a' && b <= 'z' }
	return (i == 0 || !isLetter(lower[i-1])) && (i+n == len(lower) || !isLetter(lower[i+n]))
}

// quote is the part of line around position at, on one line of at most 160 characters: what
// was refused is usually named just before the error text (a path, a command).
func quote(line string, at int) string {
	start := max(at-120, 0)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	q := OneLine(line[start:], 160)
	if start > 0 {
		q = "…" + q
	}
	return q
}

// usesSharedMemory says line is from a program using POSIX shared memory or semaphores, which
// live in /dev/shm.
func usesSharedMemory(line string) bool {
	lower := strings.ToLower(line)
	return slices.ContainsFunc([]string{"/dev/shm", "semlock", "multiprocessing", "shm_open", "sem_open", "shared_memory"},
		func(w string) bool { return strings.Contains(lower, w) })
}
