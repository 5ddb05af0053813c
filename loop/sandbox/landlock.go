package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// confine restricts the calling thread, and so every process it starts from now on: read and
// execute everywhere, write only in p.Writable and /dev (for /dev/null and terminals); TCP
// bind and connect only when p.Network; no signals to processes outside the sandbox
// (git-norma, the user's shells). Best effort below ABI 6: the parts an older kernel lacks are
// left out, never the whole.
//
// Only the thread: a launcher that serves a whole run starts each command from a thread of
// its own, confined for that command alone, while its other threads stay free to start the
// next one. (go-landlock restricts every thread of the process below ABI 8, which also stops
// the whole Go runtime twice.) The launcher's other threads are out of a confined command's
// reach: Landlock lets it trace, or read the memory of, only processes confined at least as
// it is. The caller keeps to the thread (runtime.LockOSThread) until the command has started,
// and never gives the thread back. It says whether signals are scoped to the sandbox (ABI 6).
func confine(p Policy) (scoped bool, err error) {
	// Best effort must not mean none: asked to confine, the launcher refuses to run
	// unconfined.
	if abi, why := ABI(); abi == 0 {
		return false, errors.New(why)
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return false, err
	}
	handled := handledFS(abi)
	attr := llsys.RulesetAttr{HandledAccessFS: handled}
	if !p.Network && abi >= NetworkABI {
		attr.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
	}
	if abi >= signalScopeABI {
		// Abstract unix sockets only within the sandbox: daemons the agent started stay
		// usable, while a daemon of the user's (X11, an IDE, a session bus) would take its
		// orders.
		attr.Scoped = llsys.ScopeSignal | llsys.ScopeAbstractUnixSocket
	}
	ruleset, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return false, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	defer syscall.Close(ruleset)
	rules := []pathRule{{"/", readOnly}}
	// Of /dev, the devices every program writes and the terminals — not the rest: /dev/shm
	// would be a place every check shares with the next (list it in sandbox.allow_write if a
	// check needs it), and /dev itself would take device nodes.
	// No device ioctl but on /dev/ptmx (making a pseudo-terminal of one's own): on a terminal
	// of the user's, TIOCSTI would type commands into the user's shell.
	for _, dev := range devFiles {
		rules = append(rules, pathRule{dev, fileWrite})
	}
	rules = append(rules, pathRule{"/dev/ptmx", fileWrite | llsys.AccessFSIoctlDev}, pathRule{"/dev/pts", readOnly | dirWrite})
	for _, path := range p.Writable {
		// Refer lets files move between writable directories (mv, git's renames).
		rules = append(rules, pathRule{path, readOnly | dirWrite | llsys.AccessFSRefer})
	}
	for _, r := range rules {
		if err := r.add(ruleset, handled); err != nil {
			return false, err
		}
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); errno != 0 {
		return false, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", errno)
	}
	if err := llsys.LandlockRestrictSelf(ruleset, 0); err != nil {
		return false, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return abi >= signalScopeABI, nil
}

// handledFS are the filesystem rights Landlock ABI abi governs.
func handledFS(abi int) uint64 {
	rights := uint64(readOnly | dirWrite | llsys.AccessFSMakeChar | llsys.AccessFSMakeBlock)
	if abi >= 2 {
		rights |= llsys.AccessFSRefer
	}
	if abi < 3 {
		rights &^= llsys.AccessFSTruncate
	}
	if abi >= 5 {
		rights |= llsys.AccessFSIoctlDev
	}
	return rights
}

const (
	readOnly = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
	// dirWrite is what a writable directory allows besides reading: everything but making
	// device nodes, which, for an agent running as root, would open the disks themselves.
	dirWrite = llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir |
		llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym | llsys.AccessFSTruncate
	// fileWrite is what a writable file allows (Landlock refuses directory rights on a file).
	fileWrite = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSWriteFile | llsys.AccessFSTruncate
)

// pathRule allows access beneath path.
type pathRule struct {
	path   string
	access uint64
}

// add adds the rule to the ruleset, with the rights the ruleset handles; a file gets only the
// rights that apply to files. A missing path is left out: it cannot be written into anyway.
func (r pathRule) add(ruleset int, handled uint64) error {
	fd, err := syscall.Open(r.path, unix.O_PATH|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	access := r.access & handled
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= fileWrite | llsys.AccessFSIoctlDev
	}
	if err := llsys.LandlockAddPathBeneathRule(ruleset, &llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", r.path, err)
	}
	return nil
}

// devFiles are the devices a confined process may write.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
