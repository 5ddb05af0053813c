package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A pid namespace is what makes containment complete. The launcher starts as its first
// process (pid 1): every process of the step is then inside it, whatever it does — setsid, a
// double fork, a chain forking faster than anything can list it — and cannot leave it. When
// the launcher ends, or is killed, the kernel kills every process left in the namespace; and
// the launcher's own kill(-1) reaches exactly them, Landlock or not.
//
// The launcher also gets a mount namespace of its own, to mount a /proc that shows the
// namespace's processes: with the user's /proc, a program reading /proc/<its own pid> would
// read another process (libcap's psx, which Landlock uses in a cgo build, would spin for
// good). Where that mount fails, no namespace is used at all (Namespaces).

// namespaceAttr is how the launcher is started as pid 1 of a new pid namespace. Root (with
// CAP_SYS_ADMIN) needs nothing else; any other user also gets a user namespace in which the
// user is itself (same uid and gid), which lets it make the other two. Its capabilities there
// would end with the exec of the launcher (its uid is not 0); CAP_SYS_ADMIN is kept, as an
// ambient capability, for mounting /proc, and dropped before the command starts.
func namespaceAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC}
	if uid := os.Geteuid(); uid != 0 {
		gid := os.Getegid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// Namespaces says whether the launcher at launcher (git-norma itself) can run in namespaces
// of its own, and why not. Kernels, containers (seccomp, a masked /proc) and distributions
// (AppArmor, sysctls) each may forbid them, so it asks: it starts the launcher as it would
// for a command, to do only what it does first, and say whether it could. That costs one
// start of git-norma (a few milliseconds), once per command of git-norma's that starts any.
//
// Only a refusal is a "no": the kernel's (EPERM, EACCES, EINVAL, ENOSYS, EUSERS) or the
// probe's own (it exits 1 when a mount is refused). Anything else — no namespace or process
// left for this user (ENOSPC, EAGAIN, ENOMEM), a probe that died — is an error wrapping
// ErrNoNamespaceLeft: the weaker containment without a namespace is for machines that forbid
// them, not a state a process of the user (another run's agent, holding every namespace or
// process it may have) can force on a run.
func Namespaces(launcher string) (bool, string, error) {
	if os.Getenv(namespaceOverrideEnv) == "0" {
		return false, "pid namespaces disabled by " + namespaceOverrideEnv + " (a test setting)", nil
	}
	cmd := exec.Command(launcher, Entry, probeArg)
	cmd.SysProcAttr = namespaceAttr()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, "", nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, strings.TrimSpace(string(out)), nil
	case refused(err):
		return false, "the kernel refuses a pid namespace (" + err.Error() + ")", nil
	}
	return false, "", fmt.Errorf("%w (%v: %s)", ErrNoNamespaceLeft, err, strings.TrimSpace(string(out)))
}

// refused says err is the kernel refusing namespaces, for good.
func refused(err error) bool {
	return slices.ContainsFunc([]syscall.Errno{syscall.EPERM, syscall.EACCES, syscall.EINVAL, syscall.ENOSYS, syscall.EUSERS},
		func(no syscall.Errno) bool { return errors.Is(err, no) })
}

// ErrNoNamespaceLeft says the kernel gives namespaces, but none is left for this user.
var ErrNoNamespaceLeft = errors.New("the kernel gives namespaces, but none could be had now: this user's namespaces or processes are used up (user.max_user_namespaces, user.max_pid_namespaces, ulimit -u, a pids cgroup)")

// probeArg makes the launcher only enter its namespaces, for Namespaces.
const probeArg = "--probe-namespaces"

// probe is the launcher's side of Namespaces.
func probe() int {
	if !inNamespace() {
		fmt.Println("the launcher did not start as pid 1 of a pid namespace")
		return 1
	}
	if err := mountProc(); err != nil {
		fmt.Println(err)
		if refused(err) {
			return 1
		}
		return 3 // not a refusal: Namespaces makes it an error
	}
	return 0
}

// namespaceOverrideEnv set to 0 pretends the kernel refuses pid namespaces. It exists for
// tests only: the machines that run them allow namespaces, and the sweep that replaces them
// elsewhere must be testable end to end.
const namespaceOverrideEnv = "GIT_NORMA_SANDBOX_TEST_NAMESPACE"

// setUp prepares a launcher before it starts anything: not traceable, no file descriptor it
// inherited going on to a command, and then either its /proc (pid 1 of a namespace of its
// own: it reaps every orphan already) or the child subreaper (orphans of a command are
// reparented to it instead of init, so none escapes the sweep).
func setUp(namespaced bool) error {
	if err := notTraceable(); err != nil {
		return err
	}
	// Whatever git-norma inherited without close-on-exec (a terminal, a pipe of its caller's)
	// reached the launcher; it goes no further (Linux 5.11 and later).
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if namespaced {
		if err := mountProc(); err != nil {
			return err
		}
		ownTerminals()
		return nil
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1, 0); errno != 0 {
		return fmt.Errorf("cannot become the child subreaper: %w", errno)
	}
	return nil
}

// inNamespace says the launcher is pid 1 of its own pid namespace.
func inNamespace() bool { return os.Getpid() == 1 }

// mountProc mounts, in the launcher's own mount namespace, a /proc of its pid namespace. It
// first makes every mount private: the new /proc must not propagate to the user's mounts.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("cannot make the mounts of the launcher's namespace private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("cannot mount a /proc of the launcher's pid namespace: %w", err)
	}
	return nil
}

// ownTerminals mounts, in the launcher's mount namespace, a devpts of its own on /dev/pts:
// commands may write there (the pseudo-terminals they make, through /dev/ptmx, which opens
// the devpts beside it) and read every file, so on the user's they would open the user's
// terminals by name, setsid or not — read what is typed in another shell before it can,
// write escape sequences to its screen. Best effort, as the README says: a kernel that
// refuses the mount leaves the user's.
func ownTerminals() {
	_ = syscall.Mount("devpts", "/dev/pts", "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
}

// dropCapabilities drops, on the calling thread, what the command must not get: capabilities
// are per thread, and a new process gets those of the thread that started it, so the caller
// keeps to this thread (runtime.LockOSThread) until it has started the command. A user other
// than root loses every capability there, the CAP_SYS_ADMIN namespaceAttr gave included. Root's
// command is root, but a confined one lacks what would let it undo the sandbox: rootDrops
// leave this thread's bounding set (mode off confines nothing, and takes nothing from root).
// The launcher's other threads keep theirs, which is safe only because the launcher cannot be
// traced (notTraceable); dropping them on every thread instead stops the whole runtime, twice
// as costly as the rest of the launcher's work.
func dropCapabilities(confined bool) error {
	header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // 64-bit sets: two of each
	var sets [2]unix.CapUserData
	if os.Geteuid() == 0 {
		if !confined {
			return nil
		}
		for _, c := range rootDrops {
			_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0)
			if errno != 0 && errno != syscall.EINVAL { // EINVAL: a capability this kernel lacks
				return fmt.Errorf("cannot drop capability %d from the command's bounding set: %w", c, errno)
			}
		}
		// A root exec gets the bounding set and the inheritable one: whatever started
		// git-norma may have filled that (capsh, systemd's CapabilityInheritable=, some
		// container runtimes). Emptying it empties the ambient set too.
		if err := unix.Capget(&header, &sets[0]); err != nil {
			return fmt.Errorf("cannot read the launcher's capabilities: %w", err)
		}
		sets[0].Inheritable, sets[1].Inheritable = 0, 0
	}
	if err := unix.Capset(&header, &sets[0]); err != nil {
		return fmt.Errorf("cannot drop the launcher's capabilities: %w", err)
	}
	return nil
}

// notTraceable makes the launcher not dumpable: only a process with CAP_SYS_PTRACE over it may
// then trace it or read its /proc entries (its memory, its file descriptors — its socket), and
// the commands have none. A launcher is confined on one thread only, the one that starts a
// command, and Landlock lets the command trace that thread (it is in the command's own
// domain): traced, its memory is the whole launcher's, and code written there would run on
// the threads no Landlock restricts.
func notTraceable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("cannot make the launcher untraceable: %w", errno)
	}
	return nil
}

// rootDrops are the capabilities (linux/capability.h) a root command does not get: what
// reaches past Landlock and the namespaces — CAP_SYS_ADMIN (mounts, open_tree, which Landlock
// does not govern, setns), CAP_SYS_MODULE, CAP_SYS_PTRACE, CAP_SYS_RAWIO, CAP_DAC_READ_SEARCH
// (opening files by handle: open_by_handle_at), CAP_SYS_BOOT, CAP_MKNOD, CAP_NET_ADMIN,
// CAP_NET_RAW (raw sockets pass Landlock's TCP rules), CAP_SETFCAP (file capabilities: a root
// binary that stays root), CAP_SYS_TIME, CAP_LINUX_IMMUTABLE, CAP_AUDIT_CONTROL,
// CAP_MAC_OVERRIDE, CAP_MAC_ADMIN, CAP_SYSLOG, CAP_PERFMON, CAP_BPF, CAP_CHECKPOINT_RESTORE,
// and CAP_SYS_NICE: without it the kernel lets a process change the scheduling of no process
// holding capabilities it lacks (cap_safe_nice) — the launcher's threads, whose CPUs, priority
// and I/O class the run's next command (a check) would inherit: pinned to one CPU, a test
// suite that skips its concurrency test there passes.
var rootDrops = []uintptr{21, 16, 19, 17, 2, 22, 27, 12, 13, 31, 25, 9, 30, 32, 33, 34, 38, 39, 40, 23}

// killNamespace kills every process of the namespace but the launcher (killAll) and names
// them (its /proc is the namespace's own).
func killNamespace() []Process {
	if noChild() {
		return nil
	}
	var killed []Process
	for _, p := range processes(func(pid, _ int) bool { return pid != 1 }) {
		if !p.zombie {
			killed = append(killed, p.Process)
		}
	}
	killAll()
	return killed
}
