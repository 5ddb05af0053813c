package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// A launcher serves a whole run (StartServer), not one command: a re-exec of git-norma costs
// more than everything else the launcher does for a command (docs/performance.md), and a run
// starts two commands an iteration.
//
// git-norma talks to it over a sequenced-packet socket (connFD): a request is one message,
// the command's three streams ride along as file descriptors. When that socket closes —
// git-norma ended, or died — the launcher kills the command it runs and ends.

// serveArg makes the launcher serve a run (StartServer).
const serveArg = "--serve"

// connFD is the serving launcher's end of its socket: cmd.ExtraFiles[0].
const connFD = 3

// request is one message from git-norma: start a command, or signal the one running.
type request struct {
	Start  *startRequest `json:"start,omitempty"`
	Signal int           `json:"signal,omitempty"`
}

// startRequest is a command to start; its stdin, stdout and stderr are the message's files.
type startRequest struct {
	Path   string   `json:"path"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Dir    string   `json:"dir"`
	Policy Policy   `json:"policy"`
}

// answer is one message to git-norma: the command started (or could not: Report.StartError),
// then it ended (Ended, with its exit status and what was killed).
type answer struct {
	Ended  bool   `json:"ended,omitempty"`
	Code   int    `json:"code,omitempty"`
	Report Report `json:"report"`
}

// maxNamed and maxCmdline bound how many killed processes an answer names, and by how much of
// their command line: it must fit in one message.
const (
	maxNamed   = 200
	maxCmdline = 256
)

// maxMessage bounds one request: the environment is most of it.
const maxMessage = 4 << 20

// serve is the serving launcher's main loop.
func serve() int {
	syscall.CloseOnExec(connFD)
	conn := os.NewFile(connFD, "sandbox-conn")
	namespaced := inNamespace()
	if err := setUp(namespaced); err != nil {
		return 126
	}
	limits, err := currentLimits()
	if err != nil {
		return 126
	}
	// The signals that end a Go program are caught and dropped: a command may send them to
	// its launcher, which must live to kill what it leaves and say so. SIGTERM and SIGINT go
	// on to the command.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	signal.Notify(make(chan os.Signal, 1), fatalSignals...)

	requests := make(chan received)
	go readRequests(conn, requests)
	var current *job
	for {
		var ended <-chan answer
		if current != nil {
			ended = current.ended
		}
		select {
		case r, ok := <-requests:
			switch {
			case !ok: // git-norma is gone: so is what it asked for
				if current != nil {
					current.signal(syscall.SIGKILL)
					<-current.ended
				}
				return 0
			case r.req.Start != nil && current == nil:
				current = startJob(*r.req.Start, r.files, namespaced, limits)
				a := <-current.started
				send(conn, a)
				if a.Report.StartError != "" {
					<-current.ended // nothing ran: nothing to say when it ends
					current = nil
				}
				if a.Report.Tampered {
					return 0
				}
			case r.req.Start != nil:
				closeAll(r.files)
				send(conn, answer{Report: Report{StartError: "the sandbox launcher runs a command already"}})
			case r.req.Signal != 0 && current != nil:
				current.signal(syscall.Signal(r.req.Signal))
			}
		case a := <-ended:
			send(conn, a)
			current = nil
		case sig := <-sigs:
			if current != nil {
				current.signal(sig.(syscall.Signal))
			}
		}
	}
}

// received is a request and the files that came with it.
type received struct {
	req   request
	files []*os.File
}

// readRequests reads requests until the socket closes (or says what no request says).
func readRequests(conn *os.File, out chan<- received) {
	defer close(out)
	buf := make([]byte, maxMessage)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(int(conn.Fd()), buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		files, err := receivedFiles(oob[:oobn])
		var req request
		if err != nil || json.Unmarshal(buf[:n], &req) != nil {
			closeAll(files)
			return
		}
		out <- received{req, files}
	}
}

// receivedFiles are the file descriptors of a message's control data.
func receivedFiles(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return files, err
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "stream"))
		}
	}
	return files, nil
}

// send writes a to git-norma. A command that left a great many processes running gets the
// first maxNamed of them named, each by at most maxCmdline bytes, and the count of the rest:
// an answer must fit in one message, or git-norma would wait for it for good.
func send(conn *os.File, a answer) {
	k := a.Report.Killed
	if len(k) > maxNamed {
		k = append(k[:maxNamed:maxNamed], Process{Cmdline: fmt.Sprintf("and %d more", len(k)-maxNamed)})
	}
	for i := range k {
		if len(k[i].Cmdline) > maxCmdline {
			k[i].Cmdline = k[i].Cmdline[:maxCmdline] + "..."
		}
	}
	a.Report.Killed = k
	data, _ := json.Marshal(a)
	if _, err := conn.Write(data); err != nil && len(k) > 0 {
		a.Report.Killed = []Process{{Cmdline: fmt.Sprintf("%d processes", len(k))}}
		data, _ = json.Marshal(a)
		_, _ = conn.Write(data)
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// job is the command the launcher runs.
type job struct {
	started chan answer
	ended   chan answer
	signals chan os.Signal
}

func (j *job) signal(sig syscall.Signal) {
	select {
	case j.signals <- sig:
	default: // signals queued already: the command is being stopped
	}
}

// startJob starts the command on a thread of its own, which it confines for the command and
// never gives back: the Go runtime ends a thread whose goroutine ends locked to it, so no
// other work ever runs confined, or with the capabilities it dropped.
func startJob(req startRequest, files []*os.File, namespaced bool, limits limits) *job {
	j := &job{started: make(chan answer, 1), ended: make(chan answer, 1), signals: make(chan os.Signal, 4)}
	go func() {
		runtime.LockOSThread()
		code, rep := j.run(req, files, namespaced, limits)
		j.ended <- answer{Ended: true, Code: code, Report: rep}
	}()
	return j
}

// run starts the command, waits for it and kills what it left; it says it started (or why
// not) on j.started as soon as it knows.
func (j *job) run(req startRequest, files []*os.File, namespaced bool, limits limits) (int, Report) {
	defer closeAll(files)
	var rep Report
	fail := func(code int) (int, Report) {
		j.started <- answer{Report: rep}
		return code, Report{}
	}
	if err := limits.restore(); err != nil {
		rep.StartError, rep.Tampered = err.Error(), true
		return fail(126)
	}
	if len(files) != 3 {
		// Its descriptors did not fit: an earlier command lowered the launcher's RLIMIT_NOFILE
		// when this request came (restored since). A new launcher starts it.
		rep.StartError, rep.Tampered = "the sandbox launcher got no streams for the command", true
		return fail(126)
	}
	p := req.Policy
	if namespaced {
		// SysV objects and POSIX message queues outlive the processes that made them: each
		// command gets an IPC namespace of its own (this thread's, which the command inherits),
		// so that what an agent left there never reaches the checks that judge its work.
		if err := syscall.Unshare(syscall.CLONE_NEWIPC); err != nil {
			rep.StartError = "cannot give the command an IPC namespace of its own: " + err.Error()
			return fail(126)
		}
		if p.Landlock {
			maskSockets()
		}
	}
	if err := dropCapabilities(p.Landlock); err != nil {
		rep.StartError = err.Error()
		return fail(126)
	}
	scoped := false
	if p.Landlock {
		var err error
		if scoped, err = confine(p); err != nil {
			rep.StartError = "cannot confine the command with Landlock: " + err.Error()
			return fail(126)
		}
	}
	proc, err := os.StartProcess(req.Path, req.Args, &os.ProcAttr{
		Dir: req.Dir, Env: req.Env, Files: files, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		rep.StartError = req.Path // Report.Err makes it an *os.PathError with Errno
		if !errors.As(err, &rep.Errno) {
			rep.StartError = err.Error()
		}
		return fail(127)
	}
	j.started <- answer{}
	closeAll(files)
	status := waitFor(proc.Pid, j.signals)
	if namespaced {
		rep.Killed = killNamespace()
	} else {
		rep.Killed = sweep()
		if scoped {
			killAll()
		}
	}
	return exitCode(status), rep
}
