package gitnorma

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/notify"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// notifyApp is an App whose notify command is argv, over an embedded backlog in a temp dir.
func notifyApp(t *testing.T, argv ...string) (*App, tracker.Tracker) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".beads"), 0o755))
	tr := tracker.NewJSONL(filepath.Join(root, ".beads", "issues.jsonl"), filepath.Join(root, "tasks.lock"), "norma")
	cfg := config.Default()
	cfg.Notify = argv
	return &App{Repo: &Repo{Root: root}, Config: cfg, Now: time.Now, backlog: tr}, tr
}

func TestNotifySendsTheEventOnStdin(t *testing.T) {
	a, _ := notifyApp(t, "sh", "-c", `cat > event.json; printf '%s %s' "$NORMA_EVENT" "$NORMA_TASK_ID" > env.txt`)
	rep := RunReport{RunID: "r-1", TaskID: "norma-a", Title: "A", Status: "passed", Verdict: "PASS",
		StopReason: "none", Message: "PASS; landed", Landed: "abc123"}
	var warn warnings
	a.notifier().notifyRunEnd(context.Background(), rep, nil, warn.live)
	assert.Empty(t, warn.String())

	data, err := os.ReadFile(filepath.Join(a.Repo.Root, "event.json"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, map[string]any{"event": "run_ended", "run_id": "r-1", "task_id": "norma-a", "title": "A",
		"status": "passed", "verdict": "PASS", "stop_reason": "none", "exit_code": 0.0,
		"message": "PASS; landed", "landed_commit": "abc123"}, got)
	env, err := os.ReadFile(filepath.Join(a.Repo.Root, "env.txt"))
	require.NoError(t, err)
	assert.Equal(t, "run_ended norma-a", string(env))
}

func TestNotifyEventSaysWhyItFailed(t *testing.T) {
	a, _ := notifyApp(t, "true")
	f := &loop.Failure{Iteration: 2, Verdict: "FAIL", Summary: "iteration 2 FAIL: `make` exited 2",
		Failing: []loop.FailedCheck{{ACID: "AC-1", CheckID: "CHK-AC-1", Cmd: "make", ExitCode: 2, OutputTail: "expected 3, got 4\n"}}}
	ev := a.notifier().notifyEvent(context.Background(), RunReport{RunID: "r-1", Status: "stopped", Verdict: "FAIL", StopReason: "no_progress",
		ExitCode: ExitStopped, Failure: f}, nil)
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"failure":{"iteration":2,"verdict":"FAIL","failing":[{"ac_id":"AC-1","check_id":"CHK-AC-1","cmd":"make","exit_code":2,"output_tail":"expected 3, got 4\n"}]`)
	assert.Equal(t, notify.NeedsHuman, ev.Event)
}

func TestNotifyEventNeedsHuman(t *testing.T) {
	a, tr := notifyApp(t, "true")
	blocked, err := tr.Create(context.Background(), tracker.NewTask{Title: "B", Labels: []string{LabelBlocked}})
	require.NoError(t, err)
	cases := []struct {
		name string
		rep  RunReport
		err  error
		want string
	}{
		{"passed", RunReport{Status: "passed", Verdict: "PASS"}, nil, notify.RunEnded},
		{"budget", RunReport{Status: "stopped", StopReason: "budget_exceeded", ExitCode: ExitStopped}, nil, notify.NeedsHuman},
		{"verify missing", RunReport{Status: "stopped", StopReason: "verify_missing", ExitCode: ExitStopped}, nil, notify.NeedsHuman},
		{"paused", RunReport{Status: "stopped", StopReason: "paused", ExitCode: ExitStopped}, nil, notify.RunEnded},
		{"decomposed", RunReport{Status: "stopped", StopReason: "decomposed", ExitCode: ExitStopped}, nil, notify.RunEnded},
		{"continuing", RunReport{Status: "stopped", StopReason: "dependency_blocked", ExitCode: ExitStopped, continueWith: "norma-x"}, nil, notify.RunEnded},
		{"land refused", RunReport{Status: "passed", Verdict: "PASS", ExitCode: ExitLandRefused}, nil, notify.NeedsHuman},
		{"interrupted", RunReport{Status: "stopped", StopReason: "interrupted", ExitCode: ExitInterrupted}, nil, notify.RunEnded},
		{"three strikes", RunReport{TaskID: blocked.ID, Status: "failed", Verdict: "FAIL", ExitCode: ExitFail}, nil, notify.NeedsHuman},
		{"orchestrator error", RunReport{Status: "running"}, errors.New("disk full"), notify.RunEnded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rep.RunID = "r-1"
			ev := a.notifier().notifyEvent(context.Background(), c.rep, c.err)
			assert.Equal(t, c.want, ev.Event)
			if c.err != nil {
				assert.Equal(t, "error", ev.Status)
				assert.Equal(t, ExitFail, ev.ExitCode)
				assert.Equal(t, "disk full", ev.Message)
			}
		})
	}
}

func TestNotifyFailuresAreOnlyWarned(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		want string
	}{
		{"exit status", []string{"sh", "-c", "echo no webhook >&2; exit 3"}, "warning: notify command failed for run r-1: sh: exit status 3: no webhook\n"},
		{"missing program", []string{"./no-such-notifier"}, "warning: notify command failed for run r-1: ./no-such-notifier: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, _ := notifyApp(t, c.argv...)
			var warn warnings
			start := time.Now()
			a.notifier().notifyRunEnd(context.Background(), RunReport{RunID: "r-1", Status: "passed"}, nil, warn.live)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Contains(t, warn.String(), c.want)
		})
	}
}

// A notify command that hangs (with a child holding its output) is killed, group and all.
func TestNotifyTimeoutKills(t *testing.T) {
	a, _ := notifyApp(t, "sh", "-c", "sleep 30 & sleep 30")
	start := time.Now()
	err := a.notifier().runNotify(context.Background(), notify.Event{Event: notify.RunEnded, RunID: "r-1"}, 200*time.Millisecond)
	assert.EqualError(t, err, "sh: killed after 200ms")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestNotifyNotConfiguredRunsNothing(t *testing.T) {
	a, _ := notifyApp(t)
	var warn warnings
	a.notifier().notifyRunEnd(context.Background(), RunReport{RunID: "r-1"}, nil, warn.live)
	assert.Empty(t, warn.String())
}

// warnings collects the warnings said live, one line each as the command line shows them.
type warnings struct{ bytes.Buffer }

func (w *warnings) live(l loop.Live) {
	if l.Warning {
		fmt.Fprintf(&w.Buffer, "warning: %s\n", l.Text)
	}
}
