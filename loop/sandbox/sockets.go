package sandbox

import (
	"bufio"
	"os"
	"strings"
	"syscall"
)

// Landlock (up to ABI 7) does not govern connecting to a unix socket that has a path: a
// confined command could ask any daemon listening on one to act for it, outside the sandbox
// — tmux (`tmux run-shell`), the user's systemd or D-Bus session bus (start a unit), docker,
// an ssh-agent. In its own mount namespace, before Landlock (which forbids mounting), the
// launcher puts /dev/null over every such socket that exists when the step starts: connecting
// to it is refused. Sockets the command makes itself, later, are its own.

// maskSockets binds /dev/null over every unix socket with a path that the kernel lists
// (/proc/net/unix, all of this network namespace's). A socket that cannot be masked is one
// this user cannot reach either (a directory of another user's) or that is gone; it returns
// the paths it could not mask for any other reason.
func maskSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return []string{"/proc/net/unix: " + err.Error()}
	}
	defer f.Close()
	var failed []string
	seen := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		path := socketPath(s.Text())
		if path == "" || seen[path] {
			continue
		}
		seen[path] = true
		err := syscall.Mount("/dev/null", path, "", syscall.MS_BIND, "")
		if err != nil && err != syscall.ENOENT && err != syscall.EACCES && err != syscall.ENOTDIR {
			failed = append(failed, path+": "+err.Error())
		}
	}
	return failed
}

// socketPath is the path of a line of /proc/net/unix ("Num RefCount Protocol Flags Type St
// Inode Path"), or "" for a socket without one (unnamed, or abstract: "@name").
func socketPath(line string) string {
	fields := strings.Fields(line)
	if len(fields) < 8 || !strings.HasPrefix(fields[7], "/") {
		return ""
	}
	return strings.Join(fields[7:], " ")
}
