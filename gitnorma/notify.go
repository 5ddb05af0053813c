package gitnorma

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// Notify events (the "event" field).
const (
	EventRunEnded   = "run_ended"
	EventNeedsHuman = "needs_human"
)

// notifyTimeout bounds the notify command; it is killed (with its process group) after it.
const notifyTimeout = 10 * time.Second

// NotifyEvent is what the configured notify command reads on stdin, one JSON object per run.
type NotifyEvent struct {
	// Event is needs_human when the run ended waiting for a person (a budget or stop rule
	// stopped it, the three-strike rule blocked the task, or landing was refused), else
	// run_ended.
	Event        string `json:"event"`
	RunID        string `json:"run_id"`
	TaskID       string `json:"task_id"`
	Title        string `json:"title"`
	Status       string `json:"status"`
	Verdict      string `json:"verdict"`
	StopReason   string `json:"stop_reason"`
	ExitCode     int    `json:"exit_code"`
	Message      string `json:"message"`
	LandedCommit string `json:"landed_commit"`
	// Failure says why the run's last Check failed, when it did not pass.
	Failure *loop.Failure `json:"failure,omitempty"`
}

// notifier runs the user's notify command: the command, where it runs, and the tracker it
// asks whether a task is blocked.
type notifier struct {
	cmd     []string
	root    string
	tracker func() (tracker.Tracker, error)
}

func (a *App) notifier() notifier {
	return notifier{cmd: a.Config.Notify, root: a.Repo.Root, tracker: a.Tracker}
}

// notifyRunEnd runs the configured notify command (if any) for a run that ended. A failure
// is only warned about on warn: notification never changes how a run ended.
func (n notifier) notifyRunEnd(ctx context.Context, rep RunReport, runErr error, live loop.LiveFunc) {
	if len(n.cmd) == 0 || rep.RunID == "" {
		return
	}
	ev := n.notifyEvent(context.WithoutCancel(ctx), rep, runErr)
	if err := n.runNotify(context.WithoutCancel(ctx), ev, notifyTimeout); err != nil {
		warn(live, rep.TaskID, "notify command failed for run %s: %v", rep.RunID, err)
	}
}

// notifyEvent builds the event of a run report (and the error that ended it, if any).
func (n notifier) notifyEvent(ctx context.Context, rep RunReport, runErr error) NotifyEvent {
	ev := NotifyEvent{Event: EventRunEnded, RunID: rep.RunID, TaskID: rep.TaskID, Title: rep.Title,
		Status: rep.Status, Verdict: rep.Verdict, StopReason: rep.StopReason, ExitCode: rep.ExitCode,
		Message: rep.Message, LandedCommit: rep.Landed, Failure: rep.Failure}
	if runErr != nil {
		ev.Status, ev.ExitCode, ev.Message = "error", ExitCode(runErr), runErr.Error()
	}
	if ev.ExitCode == ExitLandRefused || ev.ExitCode == ExitStopped && rep.continueWith == "" &&
		!slices.Contains([]string{loop.StopPaused, loop.StopDecomposed}, rep.StopReason) {
		ev.Event = EventNeedsHuman
	}
	if ev.Verdict != loop.VerdictPass && n.taskBlocked(ctx, rep.TaskID) {
		ev.Event = EventNeedsHuman
		ev.Message = "task blocked (" + LabelBlocked + "): checks failed in 3 consecutive runs; " + ev.Message
	}
	return ev
}

// taskBlocked says whether the three-strike rule has blocked the task.
func (n notifier) taskBlocked(ctx context.Context, id string) bool {
	tr, err := n.tracker()
	if err != nil || id == "" {
		return false
	}
	t, err := tr.Get(ctx, id)
	return err == nil && slices.Contains(t.Labels, LabelBlocked)
}

// runNotify runs the notify argv (never a shell string) in the repository root with the event
// on stdin and NORMA_EVENT, NORMA_RUN_ID, NORMA_TASK_ID and NORMA_STATUS in its environment.
func (n notifier) runNotify(ctx context.Context, ev NotifyEvent, limit time.Duration) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, repoProgram(n.root, n.cmd[0]), n.cmd[1:]...)
	cmd.Dir = n.root
	cmd.Stdin = bytes.NewReader(append(data, '\n'))
	cmd.Env = append(os.Environ(), "NORMA_EVENT="+ev.Event, "NORMA_RUN_ID="+ev.RunID,
		"NORMA_TASK_ID="+ev.TaskID, "NORMA_STATUS="+ev.Status)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("%s: killed after %s", n.cmd[0], limit)
	case err != nil && out.Len() > 0:
		return fmt.Errorf("%s: %v: %s", n.cmd[0], err, strings.TrimSpace(out.String()))
	case err != nil:
		return fmt.Errorf("%s: %v", n.cmd[0], err)
	}
	return nil
}

// tailBuffer keeps the last 512 bytes written to it, for the warning.
type tailBuffer struct{ bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n, _ := t.Buffer.Write(p)
	if over := t.Len() - 512; over > 0 {
		t.Next(over)
	}
	return n, nil
}
