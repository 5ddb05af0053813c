package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Server is a launcher serving a run (see serve): it starts the run's commands one at a time,
// each confined and contained as Wrap's launcher would, without a start of git-norma's binary
// for each. Close ends it.
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
	// Shut down before the close: a Wait blocked reading the socket holds the file open.
	_ = syscall.Shutdown(int(s.conn.Fd()), syscall.SHUT_RDWR)
	s.conn.Close()
	select {
	case <-s.exited:
	case <-time.After(closeGrace): // stopped (see Abandon): it cannot see the socket close
		s.kill()
		<-s.exited
	}
}

// kill kills the launcher and what it runs. In its pid namespace, the launcher's end is the
// end of all; elsewhere its children — the command and the orphans it took in — and their
// process groups are killed first.
func (s *Server) kill() {
	for _, c := range children(s.proc.Pid) {
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		_ = syscall.Kill(c.pid, syscall.SIGKILL)
	}
	_ = s.proc.Kill()
}

// closeGrace is how long Close waits for the launcher to end what it runs and itself.
const closeGrace = 5 * time.Second

// Command is what to start: the program at Path with Args (Args[0] its name), in Dir, with
// exactly Env, its standard streams Stdin, Stdout and Stderr (nil: /dev/null).
type Command struct {
	Path                  string
	Args, Env             []string
	Dir                   string
	Stdin, Stdout, Stderr *os.File
}

// Job is a command the launcher runs.
type Job struct {
	s    *Server
	once sync.Once
}

// Start sends c to the launcher, to start confined by p; Wait says whether it started. The
// next Start waits until this command's Wait has returned. (Start does not wait for the
// launcher's answer: a command can stop its launcher — see Abandon — even before that answer
// is sent, and only Wait's caller knows how long to wait.)
func (s *Server) Start(c Command, p Policy) (*Job, error) {
	s.mu.Lock()
	files, closeOurs, err := streams(c)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	data, err := json.Marshal(request{Start: &startRequest{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Policy: p}})
	if err == nil {
		fds := []int{int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd())}
		if err = syscall.Sendmsg(int(s.conn.Fd()), data, syscall.UnixRights(fds...), nil, 0); err != nil {
			err = fmt.Errorf("send %s to the sandbox launcher: %w", c.Path, err)
		}
	}
	closeOurs()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return &Job{s: s}, nil
}

// streams are c's three streams as files, /dev/null for those it has none; closeOurs closes
// the ones opened here.
func streams(c Command) (files [3]*os.File, closeOurs func(), err error) {
	var opened []*os.File
	closeOurs = func() {
		for _, f := range opened {
			f.Close()
		}
	}
	for i, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		if f == nil {
			if f, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				closeOurs()
				return files, nil, err
			}
			opened = append(opened, f)
		}
		files[i] = f
	}
	return files, closeOurs, nil
}

// receive reads the launcher's next answer.
func (s *Server) receive() (answer, error) {
	for {
		n, err := s.conn.Read(s.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return answer{}, errLauncherGone
		}
		var a answer
		if err := json.Unmarshal(s.buf[:n], &a); err != nil {
			return answer{}, fmt.Errorf("the sandbox launcher said what it cannot say: %w", err)
		}
		return a, nil
	}
}

// errLauncherGone says the serving launcher ended while it had a command to run.
var errLauncherGone = errors.New("the sandbox launcher ended unexpectedly")

// Signal asks the launcher to send sig to the command's process group (SIGTERM and SIGINT:
// it forces the command stopGrace later).
func (j *Job) Signal(sig syscall.Signal) {
	data, _ := json.Marshal(request{Signal: int(sig)})
	_, _ = j.s.conn.Write(data)
}

// Abandon kills the launcher and what it runs, for a launcher that does not answer (a command
// can stop it where it has no pid namespace: the thread that started the command is in the
// command's Landlock domain). Wait then returns.
func (j *Job) Abandon() { j.s.kill() }

// Wait waits for the command to start and end: its exit status (128+signal when a signal ended
// it) and what the launcher killed when it did. A command that could not start returns exit
// status -1 and why (errors.Is matches os.ErrNotExist and os.ErrPermission as for
// exec.Cmd.Start); so does a launcher that died.
func (j *Job) Wait() (int, Report, error) {
	defer j.once.Do(j.s.mu.Unlock)
	a, err := j.s.receive()
	if err == nil {
		err = a.Report.Err()
	}
	if err == nil {
		a, err = j.s.receive()
	}
	if err != nil {
		return -1, Report{}, err
	}
	if !a.Ended {
		return -1, Report{}, io.ErrUnexpectedEOF
	}
	return a.Code, a.Report, nil
}
