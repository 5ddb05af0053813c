package sandbox

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Landlock (up to ABI 7) does not govern connecting to a unix socket that has a path: a
// confined command could ask a daemon listening on one to act for it, outside the sandbox —
// tmux (`tmux run-shell`), the user's systemd or D-Bus session bus (start a unit), docker.
// In its own mount namespace, before Landlock (which forbids mounting), the launcher puts
// /dev/null over every such socket the kernel names when the step starts: connecting to it is
// refused. That is a list, not a boundary: a socket made later, one the kernel names by a path
// it no longer has (bound under a temporary name, then linked elsewhere, as OpenSSH's
// ControlMaster does), one bound by a relative path or in another network namespace, and the
// same directory seen through another mount stay reachable. The README says so.

// maskSockets binds /dev/null over every unix socket with an absolute path that
// /proc/net/unix lists (this network namespace's). One that cannot be masked is left as it
// is: gone, or in a directory this user cannot reach either. A serving launcher asks before
// each command: a path masked for an earlier one shows /dev/null (no socket: left alone), but
// a daemon that bound its socket again since (unlinking the old one takes the mask with it)
// has a socket there again.
func maskSockets() {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if path := socketPath(s.Text()); path != "" {
			maskSocket(path)
		}
	}
}

// maskSocket binds /dev/null over the socket at path, and only over a socket: whoever bound it
// (a confined agent of another run, say) may have put a symbolic link to any file there since,
// and a mount follows links — /dev/null over /usr/bin/grep would make a check's `! grep` pass.
// So the path is opened without following a last link, the file it names must be a socket, and
// the mount goes onto that very file, named by its descriptor.
func maskSocket(path string) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return
	}
	_ = unix.Mount("/dev/null", "/proc/self/fd/"+strconv.Itoa(fd), "", unix.MS_BIND, "")
}

// socketPath is the absolute path of a line of /proc/net/unix, or "" for a socket without
// one (unnamed, abstract "@name", or relative). The kernel writes seven fields ("Num RefCount
// Protocol Flags Type St Inode"), then a space and the path exactly as bound: spaces in it are
// its own.
func socketPath(line string) string {
	rest := line
	for range 7 {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			return ""
		}
		rest = rest[end:]
	}
	if path := strings.TrimPrefix(rest, " "); strings.HasPrefix(path, "/") {
		return path
	}
	return ""
}
