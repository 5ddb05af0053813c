package gitnorma

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// crashEnv names a point where the process kills itself with SIGKILL: "<point>[:<n>]" crashes
// the n-th time (default 1) the point is reached. It exists for the crash tests, which prove
// that a run killed at any of these points recovers, loses nothing and lands at most once.
const crashEnv = "GIT_NORMA_CRASH"

var crash struct {
	once  sync.Once
	point string
	at    int
	seen  int
	mu    sync.Mutex
}

// crashPoint dies here if GIT_NORMA_CRASH says so.
func crashPoint(name string) {
	crash.once.Do(func() {
		spec := os.Getenv(crashEnv)
		point, n, _ := strings.Cut(spec, ":")
		crash.point, crash.at = point, 1
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			crash.at = k
		}
	})
	if crash.point != name {
		return
	}
	crash.mu.Lock()
	defer crash.mu.Unlock()
	if crash.seen++; crash.seen == crash.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
