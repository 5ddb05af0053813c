package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

type child struct {
	Process
	zombie bool
}

// children lists the processes whose parent is pid, read from /proc/*/stat (the per-thread
// children files need CONFIG_PROC_CHILDREN, which many kernels lack).
func children(pid int) []child {
	return processes(func(n, ppid int) bool { return n != pid && ppid == pid })
}

// processes lists the processes of /proc that keep(pid, ppid) keeps.
func processes(keep func(pid, ppid int) bool) []child {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []child
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the
		// last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err != nil || !keep(n, ppid) {
			continue
		}
		out = append(out, child{Process{PID: n, Cmdline: cmdline(n, stat[:i])}, f[0] == "Z"})
	}
	return out
}

// cmdline is the process's argv joined by spaces, or its comm when argv is unreadable.
func cmdline(pid int, statHead []byte) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err == nil && len(data) > 0 {
		return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
	}
	if j := bytes.IndexByte(statHead, '('); j >= 0 {
		return string(statHead[j+1:])
	}
	return ""
}
