package gitnorma

import (
	"context"
	"slices"
	"time"

	"github.com/git-norma/git-norma/gitnorma/notify"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// notifyTimeout bounds the notify command; it is killed (with its process group) after it.
const notifyTimeout = 10 * time.Second

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
func (n notifier) notifyEvent(ctx context.Context, rep RunReport, runErr error) notify.Event {
	ev := notify.Event{Event: notify.RunEnded, RunID: rep.RunID, TaskID: rep.TaskID, Title: rep.Title,
		Status: rep.Status, Verdict: rep.Verdict, StopReason: rep.StopReason, ExitCode: rep.ExitCode,
		Message: rep.Message, LandedCommit: rep.Landed, Failure: rep.Failure}
	if runErr != nil {
		ev.Status, ev.ExitCode, ev.Message = "error", ExitCode(runErr), runErr.Error()
	}
	if ev.ExitCode == ExitLandRefused || ev.ExitCode == ExitStopped && rep.continueWith == "" &&
		!slices.Contains([]string{loop.StopPaused, loop.StopDecomposed}, rep.StopReason) {
		ev.Event = notify.NeedsHuman
	}
	if ev.Verdict != loop.VerdictPass && n.taskBlocked(ctx, rep.TaskID) {
		ev.Event = notify.NeedsHuman
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

// runNotify runs the notify command in the repository root, for at most limit.
func (n notifier) runNotify(ctx context.Context, ev notify.Event, limit time.Duration) error {
	return notify.Run(ctx, notify.Command{Argv: n.cmd, Path: repoProgram(n.root, n.cmd[0]), Dir: n.root, Limit: limit}, ev)
}
