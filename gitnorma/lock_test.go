package gitnorma

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lockPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "run.lock")
}

// requireLocked checks the error of an acquireLock that found the lock held by pid for run.
func requireLocked(t *testing.T, err error, pid int, runID string) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrLocked), "error %v does not wrap ErrLocked", err)
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
	assert.Equal(t, ExitFail, ExitCode(e))
	assert.Contains(t, err.Error(), "run "+runID)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", pid))
	assert.Contains(t, e.Hint, fmt.Sprintf("kill -INT %d", pid))
}

func TestRunLockHeldAndReleased(t *testing.T) {
	path := lockPath(t)
	started := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600))

	l, err := acquireLock(path, ErrLocked.Error())
	require.NoError(t, err)
	require.NoError(t, l.Record("20260301-113000-ab12", started))

	host, _ := os.Hostname()
	want := LockHolder{PID: os.Getpid(), Host: host, RunID: "20260301-113000-ab12", Started: started.UTC()}
	h, live := LiveLockHolder(path)
	assert.True(t, live, "held lock")
	assert.Equal(t, want, h)
	h, err = ReadLockHolder(path)
	require.NoError(t, err)
	assert.Equal(t, want, h)

	// flock conflicts between open file descriptions, so the same process cannot take it twice.
	for i := range 2 {
		l2, err := acquireLock(path, ErrLocked.Error())
		assert.Nil(t, l2, "attempt %d", i)
		requireLocked(t, err, os.Getpid(), "20260301-113000-ab12")
		assert.Contains(t, err.Error(), "since 2026-03-01T11:30:00Z")
	}

	l.Release()
	_, live = LiveLockHolder(path)
	assert.False(t, live, "released lock")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Empty(t, data, "Release empties the file")

	again, err := acquireLock(path, ErrLocked.Error())
	require.NoError(t, err, "the lock can be taken again after Release")
	require.NoError(t, again.Record("run-2", started))
	h, live = LiveLockHolder(path)
	assert.True(t, live)
	assert.Equal(t, "run-2", h.RunID)
	again.Release()
}

func TestRunLockRecordOverwrites(t *testing.T) {
	path := lockPath(t)
	l, err := acquireLock(path, ErrLocked.Error())
	require.NoError(t, err)
	defer l.Release()
	require.NoError(t, l.Record(strings.Repeat("long-run-id-", 20), time.Now()))
	require.NoError(t, l.Record("r2", time.Now()))
	h, err := ReadLockHolder(path)
	require.NoError(t, err, "a shorter second record leaves no tail of the first")
	assert.Equal(t, "r2", h.RunID)
}

func TestRunLockFree(t *testing.T) {
	dead, err := json.Marshal(LockHolder{PID: 999999, Host: "elsewhere", RunID: "old-run", Started: time.Now().Add(-time.Hour).UTC()})
	require.NoError(t, err)
	tests := []struct {
		name    string
		content *string // nil: no file
	}{
		{"no file", nil},
		{"empty file", new(string)},
		{"content left by a dead holder", ptr(string(dead))},
		{"garbage content", ptr("not json")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := lockPath(t)
			if tt.content != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tt.content), 0o600))
			}
			h, live := LiveLockHolder(path)
			assert.False(t, live, "nothing holds the flock")
			assert.Equal(t, LockHolder{}, h)

			l, err := acquireLock(path, ErrLocked.Error())
			require.NoError(t, err)
			require.NoError(t, l.Record("new-run", time.Now()))
			h, live = LiveLockHolder(path)
			assert.True(t, live, "held after acquireLock")
			assert.Equal(t, "new-run", h.RunID)
			assert.Equal(t, os.Getpid(), h.PID)
			l.Release()
			_, live = LiveLockHolder(path)
			assert.False(t, live, "free after Release")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Between acquireLock and Record (and for the whole of `land`, which never records) the file
// holds whatever was there before: nothing, or the record of a holder that died. A second run
// must then not be told to `kill -INT 0` (which signals the user's own process group) or to
// kill the dead holder's pid (which may belong to another process by now), and `status` must
// still see that the lock is held.
func TestRunLockHeldButNotRecorded(t *testing.T) {
	deadPID := 999999
	dead, err := json.Marshal(LockHolder{PID: deadPID, Host: "h", RunID: "dead-run", Started: time.Now().UTC()})
	require.NoError(t, err)
	tests := []struct {
		name   string
		before string
	}{
		{"empty file", ""},
		{"record of a dead holder", string(dead)},
		{"garbage", "not json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := lockPath(t)
			require.NoError(t, os.WriteFile(path, []byte(tt.before), 0o600))
			l, err := acquireLock(path, ErrLocked.Error())
			require.NoError(t, err)
			defer l.Release()

			_, err = acquireLock(path, ErrLocked.Error())
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrLocked))
			var e *Error
			require.True(t, errors.As(err, &e))
			h, live := LiveLockHolder(path)
			bad := strings.Contains(e.Hint, "kill -INT 0") || strings.Contains(err.Error(), "pid 0 ") ||
				strings.Contains(e.Hint, strconv.Itoa(deadPID)) || strings.Contains(err.Error(), "dead-run") ||
				!live || h.PID == deadPID
			assert.False(t, bad, "holder message %q, hint %q; LiveLockHolder = %+v, %v", err.Error(), e.Hint, h, live)
			assert.True(t, live)
		})
	}
}

const lockHelperEnv = "GITNORMA_TEST_LOCK_HELPER"

// TestRunLockHelperProcess is not a test: run by TestRunLockHolderDies as a separate process,
// it takes the lock, records itself, says "ready" and waits to be killed.
func TestRunLockHelperProcess(t *testing.T) {
	path := os.Getenv(lockHelperEnv)
	if path == "" {
		t.Skip("helper process for TestRunLockHolderDies")
	}
	l, err := acquireLock(path, ErrLocked.Error())
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if err := l.Record("helper-run", time.Now()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	os.Exit(2)
}

// The kernel releases the flock however the holder dies, even by SIGKILL, when Release never
// runs and the file still names the dead holder.
func TestRunLockHolderDies(t *testing.T) {
	path := lockPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunLockHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	h, live := LiveLockHolder(path)
	assert.True(t, live)
	assert.Equal(t, pid, h.PID)
	assert.Equal(t, "helper-run", h.RunID)
	_, err = acquireLock(path, ErrLocked.Error())
	requireLocked(t, err, pid, "helper-run")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	h, err = ReadLockHolder(path)
	require.NoError(t, err)
	assert.Equal(t, pid, h.PID, "the dead holder's record is still in the file")
	_, live = LiveLockHolder(path)
	assert.False(t, live, "a dead holder holds nothing")
	l, err := acquireLock(path, ErrLocked.Error())
	require.NoError(t, err)
	l.Release()
}
