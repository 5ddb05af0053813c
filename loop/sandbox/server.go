package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Server is a launcher serving a run (see serve): it starts the run's commands one at a time,
// each confined and contained, without a start of git-norma's binary for each. Close ends it.
type Server struct {
	proc *os.Process
	conn *os.File
	// mu makes commands take turns: the launcher runs one at a time.
	mu     sync.Mutex
	exited chan struct{}
	buf    []byte
}

// StartServer starts a serving launcher (the binary at launcher, normally git-norma itself),
// in a pid namespace of its own when namespace is set (see Namespaces), with dir as its
// working directory.
func StartServer(launcher, dir string, namespace bool) (*Server, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("create the sandbox launcher's socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "sandbox-conn"), os.NewFile(uintptr(fds[1]), "sandbox-conn")
	defer theirs.Close()
	cmd := exec.Command(launcher, Entry, serveArg)
	cmd.Dir = dir
	cmd.ExtraFiles = []*os.File{theirs}
	// A session of its own, so also a process group of its own, and no controlling terminal:
	// a confined process must not reach the user's terminal (TIOCSTI would type into the
	// user's shell).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if namespace {
		cmd.SysProcAttr = namespaceAttr()
	}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, fmt.Errorf("start the sandbox launcher: %w", err)
	}
	s := &Server{proc: cmd.Process, conn: ours, exited: make(chan struct{}), buf: make([]byte, 1<<20)}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// Pid is the launcher's process id, which leads its process group.
func (s *Server) Pid() int { return s.proc.Pid }

// Running says the launcher has not ended.
func (s *Server) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Close ends the launcher (it kills a command still running) and waits for it.
func (s *Server) Close() {
	// Shut down before the close: a read blocked on the socket holds the file open.
	_ = syscall.Shutdown(int(s.conn.Fd()), syscall.SHUT_RDWR)
	s.conn.Close()
	select {
	case <-s.exited:
	case <-time.After(closeGrace): // stopped (see kill): it cannot see the socket close
		s.kill()
		<-s.exited
	}
}

// closeGrace is how long Close waits for the launcher to end what it runs and itself.
const closeGrace = 5 * time.Second

// kill kills the launcher and what it runs, for a launcher that does not answer: a command can
// stop it where it has no pid namespace (the thread that started the command is in the
// command's Landlock domain). In its pid namespace, the launcher's end is the end of all;
// elsewhere its children — the command and the orphans it took in — and their process groups
// are killed first.
func (s *Server) kill() {
	for _, c := range children(s.proc.Pid) {
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		_ = syscall.Kill(c.PID, syscall.SIGKILL)
	}
	_ = s.proc.Kill()
}

// Process is a descendant the launcher killed because it outlived the command.
type Process struct {
	PID     int    `json:"pid"`
	Cmdline string `json:"cmdline"`
}

// Report is what the launcher says of a command: why it could not start, or what it killed
// once it ended.
type Report struct {
	// Killed are the descendants that were still alive when the command ended.
	Killed []Process `json:"killed,omitempty"`
	// StartError says why the command could not be started (or confined); Errno is its errno.
	StartError string        `json:"start_error,omitempty"`
	Errno      syscall.Errno `json:"errno,omitempty"`
	// Tampered says the command did not start because an earlier one changed the launcher's
	// resource limits for good (see limits): the launcher has ended.
	Tampered bool `json:"tampered,omitempty"`
}

// Err is the start failure as an error that errors.Is matches against os.ErrNotExist or
// os.ErrPermission, like a failed exec.Cmd.Start.
func (r Report) Err() error {
	if r.StartError == "" {
		return nil
	}
	if r.Tampered {
		return fmt.Errorf("%w: %s", ErrTampered, r.StartError)
	}
	if r.Errno == 0 {
		return errors.New(r.StartError)
	}
	return &os.PathError{Op: "start", Path: r.StartError, Err: r.Errno}
}

// Run runs what cmd names (its Path, Args, Env, Dir and streams: those that are not files go
// through pipes, as exec.Cmd's do) through the launcher, confined by p, and waits for it: its
// exit status (128+signal when a signal ended it) and what the launcher killed when it ended.
// A command that could not start returns -1 and why (errors.Is matches os.ErrNotExist and
// os.ErrPermission as for exec.Cmd.Start); so does a launcher that died. Once stop is closed
// the command is stopped: SIGTERM, SIGKILL answerGrace later, and answerGrace after that, a
// launcher that still does not answer is killed with what it runs.
func (s *Server) Run(cmd *exec.Cmd, p Policy, stop <-chan struct{}) (int, Report, error) {
	if cmd.Err != nil {
		return -1, Report{}, cmd.Err // the command was not found: say so as exec would
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := newStreams(cmd)
	defer st.wait()
	if err == nil {
		err = s.send(cmd, p, st.files)
		st.started() // the launcher has its copies (in flight, once sent)
	}
	if err != nil {
		return -1, Report{}, err
	}
	type result struct {
		code int
		rep  Report
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, rep, err := s.wait()
		done <- result{code, rep, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-stop:
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			s.signal(sig)
			select {
			case r = <-done:
				return r.code, r.rep, r.err
			case <-time.After(answerGrace):
			}
		}
		s.kill() // the launcher does not answer
		r = <-done
	}
	return r.code, r.rep, r.err
}

// answerGrace is how long the launcher gets to answer a signal for the command.
const answerGrace = 2 * time.Second

// send asks the launcher to start cmd with files as its streams. It does not wait for the
// answer (wait does): a command can stop its launcher even before that answer is sent.
func (s *Server) send(cmd *exec.Cmd, p Policy, files [3]*os.File) error {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	data, err := json.Marshal(request{Start: &startRequest{Path: cmd.Path, Args: cmd.Args, Env: env, Dir: cmd.Dir, Policy: p}})
	if err != nil {
		return err
	}
	fds := []int{int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd())}
	if err := syscall.Sendmsg(int(s.conn.Fd()), data, syscall.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("send %s to the sandbox launcher: %w", cmd.Path, err)
	}
	return nil
}

// wait reads the launcher's answers for the command: it started (or why not), then it ended.
func (s *Server) wait() (int, Report, error) {
	a, err := s.receive()
	if err == nil {
		err = a.Report.Err()
	}
	if err == nil {
		a, err = s.receive()
	}
	if err != nil {
		return -1, Report{}, err
	}
	if !a.Ended {
		return -1, Report{}, io.ErrUnexpectedEOF
	}
	return a.Code, a.Report, nil
}

// signal asks the launcher to send sig to the command's process group (SIGTERM and SIGINT:
// it forces the command stopGrace later).
func (s *Server) signal(sig syscall.Signal) {
	data, _ := json.Marshal(request{Signal: int(sig)})
	_, _ = s.conn.Write(data)
}

// receive reads the launcher's next answer.
func (s *Server) receive() (answer, error) {
	n, err := s.conn.Read(s.buf) // os.File retries EINTR itself
	if err != nil || n == 0 {
		return answer{}, errLauncherGone
	}
	var a answer
	if err := json.Unmarshal(s.buf[:n], &a); err != nil {
		return answer{}, fmt.Errorf("the sandbox launcher said what it cannot say: %w", err)
	}
	return a, nil
}

// errLauncherGone says the serving launcher ended while it had a command to run.
var errLauncherGone = errors.New("the sandbox launcher ended unexpectedly")

// RunAlone runs cmd as Server.Run does, through a launcher of its own started for it and ended
// after it: for a command outside a run (a worktree.setup command, git with the user's filter
// drivers). It returns as cmd.Run would: an *ExitError when the command exited non-zero, and
// ctx's error once ctx ended (which stops the command).
func RunAlone(ctx context.Context, launcher string, namespace bool, cmd *exec.Cmd, p Policy) error {
	srv, err := StartServer(launcher, cmd.Dir, namespace)
	if err != nil {
		return err
	}
	defer srv.Close()
	code, _, err := srv.Run(cmd, p, ctx.Done())
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return err
	case code != 0:
		return &ExitError{Code: code}
	}
	return nil
}

// ExitError is a command's exit status other than 0.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return "exit status " + strconv.Itoa(e.Code) }

// ExitCode is the status, as exec.ExitError's.
func (e *ExitError) ExitCode() int { return e.Code }

// streams carries the streams of a command that are not files through pipes, as exec.Cmd
// does: the launcher only takes files. nil streams are /dev/null.
type streams struct {
	files  [3]*os.File
	theirs []*os.File
	copies sync.WaitGroup
}

// newStreams are the files cmd's streams are.
func newStreams(cmd *exec.Cmd) (*streams, error) {
	s := &streams{}
	for i, std := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		f, err := s.file(std, i == 0)
		if err != nil {
			s.started()
			return s, err
		}
		s.files[i] = f
	}
	return s, nil
}

// file is std as a file: itself, /dev/null for none, else a pipe whose other end a goroutine
// copies from (input) or into (output).
func (s *streams) file(std any, input bool) (*os.File, error) {
	switch f := std.(type) {
	case *os.File:
		if f != nil {
			return f, nil
		}
	case nil:
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		if input {
			s.theirs = append(s.theirs, pr)
			s.copies.Go(func() {
				_, _ = io.Copy(pw, std.(io.Reader))
				pw.Close()
			})
			return pr, nil
		}
		s.theirs = append(s.theirs, pw)
		s.copies.Go(func() {
			_, _ = io.Copy(std.(io.Writer), pr)
			pr.Close()
		})
		return pw, nil
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.theirs = append(s.theirs, null)
	return null, nil
}

// started closes this process's copies of what the command got.
func (s *streams) started() {
	for _, f := range s.theirs {
		f.Close()
	}
	s.theirs = nil
}

// wait waits, a second at most, for what the command wrote to be copied: the launcher killed
// every process that could still hold a pipe, but one it could not kill must not keep the
// caller waiting.
func (s *streams) wait() {
	done := make(chan struct{})
	go func() {
		s.copies.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}
