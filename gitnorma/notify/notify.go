// Package notify runs the user's notify command (config "notify") for an event: an argv, never
// a shell string, with the event as one JSON line on its standard input, killed with its
// process group when it outlasts its time.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/loop"
)

// Events (the "event" field).
const (
	RunEnded   = "run_ended"
	NeedsHuman = "needs_human"
)

// Event is what the notify command reads on stdin, one JSON object per run.
type Event struct {
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

// Command is the notify command: Argv as configured, started as Path (Argv[0] resolved
// against the repository), in Dir, for at most Limit.
type Command struct {
	Argv  []string
	Path  string
	Dir   string
	Limit time.Duration
}

// Run runs c with ev on stdin and NORMA_EVENT, NORMA_RUN_ID, NORMA_TASK_ID and NORMA_STATUS in
// its environment; an error says how it failed, with the end of what it printed.
func Run(ctx context.Context, c Command, ev Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Path, c.Argv[1:]...)
	cmd.Dir = c.Dir
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
		return fmt.Errorf("%s: killed after %s", c.Argv[0], c.Limit)
	case err != nil && out.Len() > 0:
		return fmt.Errorf("%s: %v: %s", c.Argv[0], err, strings.TrimSpace(out.String()))
	case err != nil:
		return fmt.Errorf("%s: %v", c.Argv[0], err)
	}
	return nil
}

// tailBuffer keeps the last 512 bytes written to it, for the error.
type tailBuffer struct{ bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n, _ := t.Buffer.Write(p)
	if over := t.Len() - 512; over > 0 {
		t.Next(over)
	}
	return n, nil
}
