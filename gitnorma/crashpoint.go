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

// crashpoints is the process's GIT_NORMA_CRASH, read once when the App opens and handed to
// what reaches the points. nil, the usual case, crashes nowhere.
type crashpoints struct {
	point string
	at    int
	mu    sync.Mutex
	seen  int
}

func crashpointsFrom(spec string) *crashpoints {
	if spec == "" {
		return nil
	}
	point, n, _ := strings.Cut(spec, ":")
	c := &crashpoints{point: point, at: 1}
	if k, err := strconv.Atoi(n); err == nil && k > 0 {
		c.at = k
	}
	return c
}

// reach dies here if this is the point, reached for the n-th time.
func (c *crashpoints) reach(name string) {
	if c == nil || c.point != name {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen++; c.seen == c.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
