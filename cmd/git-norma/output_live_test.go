package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// stepClock is a run's clock for a progressWriter, moved by hand.
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time          { return c.t }
func (c *stepClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func writeLog(t *testing.T, dir, name, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestLiveLineOnATerminal(t *testing.T) {
	logs := t.TempDir()
	clock := &stepClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	p := &progressWriter{out: &out, tty: true, now: clock.now}
	p.live(loop.Live{Kind: loop.StepStarted, Index: 2, Role: loop.RoleDo, LogDir: logs}, false, false, "")
	assert.Equal(t, "\r\x1b[K002 do    0s", out.String(), "drawn at once")

	out.Reset()
	clock.advance(12 * time.Second)
	writeLog(t, logs, "stderr.txt", "compiling\nrunning go test ./login/...\n")
	p.tick()
	assert.Equal(t, "\r\x1b[K002 do    12s · running go test ./login/...", out.String(), "redrawn in place with the agent's activity")

	out.Reset()
	p.live(loop.Live{Kind: loop.StepEnded, Index: 2, Role: loop.RoleDo, Status: "ok", Summary: "done", Duration: 12 * time.Second}, false, false, "")
	assert.Equal(t, "\r\x1b[K002 do    ok    done (12s)\n", out.String(), "replaced by the step's line, nothing left drawn")
	assert.False(t, p.drawn)
}

func TestHeartbeatWithoutATerminal(t *testing.T) {
	logs := t.TempDir()
	clock := &stepClock{t: time.Unix(1000, 0)}
	var out bytes.Buffer
	p := &progressWriter{out: &out, now: clock.now}
	p.live(loop.Live{Kind: loop.StepStarted, TaskID: "norma-a1", Index: 2, Role: loop.RoleDo, LogDir: logs}, true, false, "")
	clock.advance(10 * time.Second)
	p.tick()
	assert.Empty(t, out.String(), "nothing before the first heartbeat is due, and no live line")
	writeLog(t, logs, "stderr.txt", "step 3 of 5\n")
	clock.advance(20 * time.Second)
	p.tick()
	clock.advance(time.Second)
	p.tick()
	assert.Equal(t, "[norma-a1] 002 do    still running (30s): step 3 of 5\n", out.String())
}

func TestVerboseStreamsTheAgentsOutput(t *testing.T) {
	logs := t.TempDir()
	var out bytes.Buffer
	p := &progressWriter{out: &out, now: (&stepClock{t: time.Unix(1000, 0)}).now}
	p.live(loop.Live{Kind: loop.StepStarted, Index: 2, Role: loop.RoleDo, LogDir: logs}, false, true, "")
	writeLog(t, logs, "stdout.txt", "first\nsec")
	p.tick()
	assert.Equal(t, "    | first\n", out.String(), "whole lines only while it runs")
	writeLog(t, logs, "stdout.txt", "ond\nthird")
	p.tick()
	p.live(loop.Live{Kind: loop.StepEnded, Index: 2, Role: loop.RoleDo, Status: "ok", Summary: "done", Duration: time.Second, LogDir: logs}, false, true, logs)
	assert.Equal(t, "    | first\n    | second\n    | third\n002 do    ok    done (1s)\n    logs: stdout.txt\n", out.String())
}
