package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// A process of the user's may change another's resource limits (prlimit), and neither the
// launcher not being dumpable nor Landlock stops it: a command could lower its launcher's, and
// every later command of the run would inherit them — a check whose `! grep TODO` fails to
// start, say, then passes. The launcher notes its limits when it starts and, before each
// command, puts back any that changed; one it cannot put back (a user other than root cannot
// raise a hard limit) ends it, and git-norma starts the command through a new one.

// rlimitCount is RLIM_NLIMITS (asm-generic/resource.h): the limits 0 to 15.
const rlimitCount = 16

// limits are a process's resource limits.
type limits [rlimitCount]unix.Rlimit

// currentLimits are the launcher's limits now.
func currentLimits() (limits, error) {
	var l limits
	for r := range l {
		if err := unix.Getrlimit(r, &l[r]); err != nil {
			return l, fmt.Errorf("read resource limit %d: %w", r, err)
		}
	}
	return l, nil
}

// ErrTampered says a command changed its launcher's resource limits, and the launcher could
// not put them back: it ended without starting the next command.
var ErrTampered = errors.New("a command changed the sandbox launcher's resource limits")

// restore puts back the limits that changed since want was noted.
func (want limits) restore() error {
	for r := range want {
		var now unix.Rlimit
		if err := unix.Getrlimit(r, &now); err != nil {
			return err
		}
		if now != want[r] {
			if err := unix.Setrlimit(r, &want[r]); err != nil {
				return fmt.Errorf("%w (limit %d: %v)", ErrTampered, r, err)
			}
		}
	}
	return nil
}
