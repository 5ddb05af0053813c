package sandbox

import (
	"errors"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// confine restricts the launcher, and so everything it starts: read and execute everywhere,
// write only in p.Writable and /dev (for /dev/null and terminals); TCP bind and connect only
// when p.Network; no signals to processes outside the sandbox (git-norma, the user's shells).
// Best effort below ABI 6: the parts an older kernel lacks are left out, never the whole.
func confine(p Policy) error {
	// Best effort must not mean none: asked to confine, the launcher refuses to run
	// unconfined.
	if abi, why := ABI(); abi == 0 {
		return errors.New(why)
	}
	cfg := landlock.V6.BestEffort()
	if p.Network {
		cfg.HandledAccessNet = 0
	}
	// Abstract unix sockets only within the sandbox: daemons the agent started stay usable,
	// while a daemon of the user's (X11, an IDE, a session bus) would take its orders.
	cfg.Scoped = landlock.ScopedSet(llsys.ScopeSignal | llsys.ScopeAbstractUnixSocket)
	rules := []landlock.Rule{landlock.RODirs("/")}
	// Of /dev, the devices every program writes and the terminals — not the rest: /dev/shm
	// would be a place every check shares with the next (list it in sandbox.allow_write if a
	// check needs it), and /dev itself would take device nodes.
	// No device ioctl but on /dev/ptmx (making a pseudo-terminal of one's own): on a terminal
	// of the user's, TIOCSTI would type commands into the user's shell.
	if devs := existing(devFiles); len(devs) > 0 {
		rules = append(rules, landlock.RWFiles(devs...))
	}
	if ptmx := existing([]string{"/dev/ptmx"}); len(ptmx) > 0 {
		rules = append(rules, landlock.RWFiles(ptmx...).WithIoctlDev())
	}
	if pts := existing([]string{"/dev/pts"}); len(pts) > 0 {
		rules = append(rules, landlock.RWDirs(pts...))
	}
	for _, path := range p.Writable {
		st, err := os.Stat(path)
		switch {
		case err != nil:
			continue // a missing path cannot be written into anyway
		case st.IsDir():
			// Refer lets files move between writable directories (mv, git's renames).
			rules = append(rules, landlock.PathAccess(dirWrite, path).WithRefer())
		default:
			rules = append(rules, landlock.RWFiles(path))
		}
	}
	return cfg.Restrict(rules...)
}

// dirWrite is what a writable directory allows: everything but making device nodes, which,
// for an agent running as root, would open the disks themselves.
const dirWrite = landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir |
	llsys.AccessFSWriteFile | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir |
	llsys.AccessFSMakeReg | llsys.AccessFSMakeSock | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym | llsys.AccessFSTruncate)

// devFiles are the devices a confined process may write.
var devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// existing are the paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
