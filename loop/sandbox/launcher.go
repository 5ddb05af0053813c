package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// stopGrace is how long the command gets between the SIGTERM the launcher forwards and its
// SIGKILL. It must leave the launcher time to sweep and answer within answerGrace.
const stopGrace = time.Second

// sweepBound bounds the sweep of leftover descendants: a process forking as fast as it is
// killed must not keep the step from ending. stopGrace + sweepBound stays under answerGrace.
const sweepBound = 500 * time.Millisecond

// Main is the launcher, git-norma's hidden command Entry: it serves a run's commands (args
// serveArg), or says whether it can have namespaces of its own (probeArg).
func Main(args []string) int {
	switch {
	case len(args) == 1 && args[0] == serveArg:
		return serve()
	case len(args) == 1 && args[0] == probeArg:
		return probe()
	}
	fmt.Fprintln(os.Stderr, "git-norma: "+Entry+" is the sandbox launcher of git-norma's own; it is not a command")
	return 2
}

// exitCode is the exit status git-norma sees: the command's own, or 128+signal when a signal
// ended it.
func exitCode(status syscall.WaitStatus) int {
	switch {
	case status.Exited():
		return status.ExitStatus()
	case status.Signaled():
		return 128 + int(status.Signal())
	}
	return 126
}

// fatalSignals are the signals that end a Go program unless it catches them, but for SIGTERM
// and SIGINT, which the launcher passes on.
var fatalSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGABRT,
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE}

// waitFor reaps children until the command itself ended, forwarding SIGTERM and SIGINT (and
// git-norma's SIGKILL, for a serving launcher) to its process group and forcing it stopGrace
// after the first one. Other children reaped meanwhile are orphans that already ended.
func waitFor(pid int, sigs <-chan os.Signal) syscall.WaitStatus {
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || got == pid {
				exited <- ws
				return
			}
		}
	}()
	var force <-chan time.Time
	for {
		select {
		case ws := <-exited:
			return ws
		case sig := <-sigs:
			_ = syscall.Kill(-pid, sig.(syscall.Signal))
			if force == nil {
				force = time.After(stopGrace)
			}
		case <-force:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// sweep kills every process still parented to the launcher — after the command ended those
// are its orphans — and reaps them, until none is left or sweepBound has passed. Killing one
// reparents its own children to us, hence the rounds.
func sweep() []Process {
	// The usual case costs one call: no child at all means no descendant is left, since the
	// subreaper inherits the top of every orphaned chain. Only otherwise is /proc read.
	if noChild() {
		return nil
	}
	var killed []Process
	seen := map[int]bool{}
	deadline := time.Now().Add(sweepBound)
	for time.Now().Before(deadline) {
		kids := children(os.Getpid())
		if len(kids) == 0 {
			break
		}
		for _, k := range kids {
			if !k.zombie && !seen[k.PID] {
				seen[k.PID] = true
				killed = append(killed, k.Process)
			}
			_ = syscall.Kill(k.PID, syscall.SIGKILL)
		}
		reap()
	}
	return killed
}

// reap collects every child that has ended, waiting briefly for the ones just killed.
func reap() {
	for range 50 {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil { // ECHILD: none left
			return
		}
		if pid == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// String describes a killed process for a message: a summary of several has no pid.
func (p Process) String() string {
	if p.PID == 0 {
		return p.Cmdline
	}
	return fmt.Sprintf("%d (%s)", p.PID, p.Cmdline)
}

// signalScopeABI is the first Landlock ABI that scopes signals to the sandbox (confine asks
// for it).
const signalScopeABI = 6

// killAll kills, with kill(-1), every process the launcher may signal until it has no child
// left: as pid 1 or the subreaper it inherits every orphan, so then none of the sandbox is
// left. It is called only where those are exactly the command's leftovers, wherever they went
// (setsid, a double fork, a chain forking faster than the sweep can kill): from pid 1 of the
// launcher's pid namespace, where one kill(-1) reaches them all (a process being killed cannot
// fork any more), or confined with Landlock's signal scope, which never reaches a process
// outside the sandbox. Elsewhere kill(-1) would reach every process of the user.
func killAll() {
	for range 1000 {
		if noChild() {
			return
		}
		_ = syscall.Kill(-1, syscall.SIGKILL)
		reap()
	}
}

// noChild says the launcher has no child, ended or not (wait4's ECHILD); it reaps one that
// ended.
func noChild() bool {
	var ws syscall.WaitStatus
	_, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
	return errors.Is(err, syscall.ECHILD)
}
