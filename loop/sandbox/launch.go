package sandbox

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// policyEnv carries the Policy (JSON) to the launcher, which removes it before starting the
// command.
const policyEnv = "GIT_NORMA_SANDBOX_POLICY"

// reportFD is the launcher's end of the report pipe: cmd.ExtraFiles[0].
const reportFD = 3

// Process is a descendant the launcher killed because it outlived the command.
type Process struct {
	PID     int    `json:"pid"`
	Cmdline string `json:"cmdline"`
}

// Report is what the launcher tells git-norma when it is done.
type Report struct {
	// Killed are the descendants that were still alive when the command ended.
	Killed []Process `json:"killed,omitempty"`
	// StartError says why the command could not be started (or confined); Errno is its errno.
	StartError string        `json:"start_error,omitempty"`
	Errno      syscall.Errno `json:"errno,omitempty"`
}

// Err is the start failure as an error that errors.Is matches against os.ErrNotExist or
// os.ErrPermission, like a failed exec.Cmd.Start.
func (r Report) Err() error {
	if r.StartError == "" {
		return nil
	}
	if r.Errno == 0 {
		return errors.New(r.StartError)
	}
	return &os.PathError{Op: "start", Path: r.StartError, Err: r.Errno}
}

// Launch is one command started through the launcher.
type Launch struct {
	r, w   *os.File
	report chan Report
}

// Wrap rewrites cmd so that it runs the launcher (the binary at launcher, normally git-norma
// itself) with policy p, which then runs what cmd ran. cmd keeps its directory, streams and
// environment. Call Started once cmd has started (or failed to), then Report after it ended.
func Wrap(cmd *exec.Cmd, launcher string, p Policy) (*Launch, error) {
	if cmd.Err != nil {
		return nil, cmd.Err // the command was not found: say so as exec would
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env[:len(env):len(env)], policyEnv+"="+string(data))
	cmd.Args = append([]string{launcher, Entry, cmd.Path}, cmd.Args...)
	cmd.Path = launcher
	cmd.ExtraFiles = []*os.File{w}
	// A session of its own, so also a process group of its own, and no controlling terminal:
	// a confined process must not reach the user's terminal (TIOCSTI would type into the
	// user's shell).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if p.Namespace {
		cmd.SysProcAttr = namespaceAttr()
	}
	l := &Launch{r: r, w: w, report: make(chan Report, 1)}
	// Read while the launcher runs: a long report must not block it in a full pipe.
	go func() {
		var rep Report
		data, _ := io.ReadAll(r)
		_ = json.Unmarshal(data, &rep)
		r.Close()
		l.report <- rep
	}()
	return l, nil
}

// Started closes git-norma's copy of the launcher's end of the pipe, so the report ends when
// the launcher does.
func (l *Launch) Started() { l.w.Close() }

// Report waits for the launcher's report; call it after the launcher exited.
func (l *Launch) Report() Report { return <-l.report }
