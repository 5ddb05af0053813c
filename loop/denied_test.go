package loop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeniedEventQuotesRefusals(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr := filepath.Join(dir, "stdout.txt"), filepath.Join(dir, "stderr.txt")
	require.NoError(t, os.WriteFile(stdout, []byte("working\nPermissionError: [Errno 13] Permission denied: '/repo/.git/config'\n"), 0o600))
	var lines []string
	for i := range 7 {
		lines = append(lines, "sh: cannot create /repo/f"+string(rune('a'+i))+": Permission denied")
	}
	lines = append(lines, lines[0], "kill: (1): Operation not permitted", "EPERMANENT is not a refusal", "all fine")
	require.NoError(t, os.WriteFile(stderr, []byte(strings.Join(lines, "\n")), 0o600))

	ev, ok := deniedEvent(stdout, stderr, filepath.Join(dir, "missing"))
	require.True(t, ok)
	assert.Equal(t, DeniedEvent, ev.Type)
	data := ev.Data.(map[string]any)
	assert.Equal(t, 9, data["count"], "each distinct refusal once; EPERMANENT is not EPERM")
	assert.Len(t, data["lines"], deniedQuote)
	assert.Contains(t, ev.Message, "[Errno 13] Permission denied: '/repo/.git/config'")
	assert.Contains(t, ev.Message, "… 4 more in the step's logs")

	require.NoError(t, os.WriteFile(stderr, []byte("all fine\n"), 0o600))
	require.NoError(t, os.WriteFile(stdout, nil, 0o600))
	_, ok = deniedEvent(stdout, stderr)
	assert.False(t, ok)
}

func TestDeniedQuoteKeepsTheEndOfALongLine(t *testing.T) {
	line := strings.Repeat("é", 300) + " open /x: permission denied"
	q := quote(line, deniedAt(line))
	assert.True(t, strings.HasPrefix(q, "…"))
	assert.Contains(t, q, "open /x: permission denied")
	assert.NotContains(t, q, "\uFFFD", "cut on a rune boundary")
}

// A refusal from Python's multiprocessing names no path: the event says it was /dev/shm.
func TestDeniedEventNamesSharedMemory(t *testing.T) {
	log := filepath.Join(t.TempDir(), "stderr.txt")
	require.NoError(t, os.WriteFile(log, []byte("Traceback (most recent call last):\n  File \"/usr/lib/python3.11/multiprocessing/synchronize.py\", line 57, in __init__\n    sl = self._semlock = _multiprocessing.SemLock(\nPermissionError: [Errno 13] Permission denied\n"), 0o644))
	ev, ok := deniedEvent(log)
	require.True(t, ok)
	assert.Contains(t, ev.Message, "needs /dev/shm")
	require.NoError(t, os.WriteFile(log, []byte("touch: cannot touch '/x': Permission denied\n"), 0o644))
	ev, ok = deniedEvent(log)
	require.True(t, ok)
	assert.NotContains(t, ev.Message, "/dev/shm")
}
