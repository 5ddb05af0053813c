package loop

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop/sandbox"
)

// unprivilegedEnv marks the copy of this test binary that runs as an unprivileged user.
const unprivilegedEnv = "NORMA_TEST_UNPRIVILEGED"

// TestNamespaceContains: the launcher in a pid namespace of its own kills what a command left
// running, however it left it, names it, and gives the command a /proc and SysV IPC of its
// namespace only and no capability; the command cannot end or read its launcher. Root makes
// the namespace directly; any other user through a user namespace, the way most users run
// git-norma: as root, the test runs a copy of itself as nobody for that path (and for
// TestConfinedCommandCannotReachDaemons), and one as root with inheritable capabilities, as
// capsh or systemd's CapabilityInheritable= may start git-norma.
func TestNamespaceContains(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	if ok, why, _ := sandbox.Namespaces(exe); !ok {
		t.Skip(why)
	}
	t.Run("as this user", checkNamespaceContains)
	if os.Geteuid() != 0 || os.Getenv(unprivilegedEnv) != "" {
		return
	}
	t.Run("as an unprivileged user", func(t *testing.T) {
		out := runCopy(t, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}},
			"^(TestNamespaceContains|TestConfinedCommandCannotReachDaemons)$")
		assert.Contains(t, out, "--- PASS: TestNamespaceContains/as_this_user")
		if abi, _ := sandbox.ABI(); abi > 0 {
			assert.Contains(t, out, "--- PASS: TestConfinedCommandCannotReachDaemons")
		}
	})
	if abi, _ := sandbox.ABI(); abi > 0 {
		t.Run("as root with inheritable capabilities", func(t *testing.T) {
			out := runCopy(t, &syscall.SysProcAttr{AmbientCaps: []uintptr{21, 19}}, "^TestNamespaceContains$")
			assert.Contains(t, out, "--- PASS: TestNamespaceContains/as_this_user")
		})
	}
}

// runCopy runs a copy of this test binary, started with attr, on the tests run names, and
// returns its output; it must pass.
func runCopy(t *testing.T, attr *syscall.SysProcAttr, run string) string {
	// Not t.TempDir: its parent is the test's alone (0700).
	dir, err := os.MkdirTemp("", "norma-copy-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	exe := filepath.Join(dir, "loop.test")
	copyFile(t, os.Args[0], exe)
	cmd := exec.Command(exe, "-test.run", run, "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), unprivilegedEnv+"=1", "TMPDIR=/tmp", "HOME="+dir)
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func checkNamespaceContains(t *testing.T) {
	if os.Getenv(unprivilegedEnv) != "" && os.Geteuid() == 0 {
		status, err := os.ReadFile("/proc/self/status")
		require.NoError(t, err)
		require.Regexp(t, `CapInh:\s+0*28\d{4}\n`, string(status), "the copy runs with inheritable capabilities")
	}
	// A SysV shared memory segment of the user's, which the command must not see.
	key := 0x4e000000 | os.Getpid()&0xffffff
	id, _, errno := syscall.Syscall(syscall.SYS_SHMGET, uintptr(key), 4096, 0o1600) // IPC_CREAT|0600
	require.Zero(t, errno, "shmget")
	t.Cleanup(func() { syscall.Syscall(syscall.SYS_SHMCTL, id, 0, 0) }) // IPC_RMID
	step := t.TempDir()
	abi, _ := sandbox.ABI()
	exe, err := os.Executable()
	require.NoError(t, err)
	s := &stepSandbox{cfg: &Sandbox{Launcher: exe, Landlock: abi > 0, Network: true, Namespace: true}, stepDir: step, private: &privateDir{}, launcher: &launcher{}}
	t.Cleanup(s.private.remove)
	t.Cleanup(s.launcher.close)
	marker := fmt.Sprintf("norma-left-%d-%d", os.Getpid(), time.Now().UnixNano())
	// A daemon in a session of its own, behind a double fork, and a count of /proc.
	cmd := exec.Command("sh", "-c", `ls /proc | grep -c '^[0-9]' > procs; grep '^Cap[IPEA]' /proc/self/status > caps; `+
		`for t in /proc/1/task/*; do cat $t/environ >/dev/null 2>&1 && echo $t >> launcher-read; done; `+
		`ipcs -m > ipcs 2>&1; kill -SEGV 1; kill -QUIT 1; kill -HUP 1; `+
		`(setsid sh -c 'while :; do sleep 0.05; done' `+marker+` </dev/null >/dev/null 2>&1 &); sleep 0.2`)
	cmd.Dir = step
	res, err := RunProcess(withStepSandbox(context.Background(), s), cmd, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)

	ev, ok := s.event()
	require.True(t, ok, "an event names what was killed")
	assert.Contains(t, ev.Message, marker)
	assert.Empty(t, processesWith(marker), "nothing of the step is left running")
	data, err := os.ReadFile(filepath.Join(step, "procs"))
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	assert.Less(t, n, 10, "the command's /proc shows its namespace, not the machine")
	// The launcher's threads keep capabilities the command lacks: none of them may be traced
	// (or read through /proc), which would make the command run code with them.
	assert.NoFileExists(t, filepath.Join(step, "launcher-read"), "the command read its launcher's /proc entries")
	ipcs, err := os.ReadFile(filepath.Join(step, "ipcs"))
	require.NoError(t, err)
	assert.NotContains(t, string(ipcs), fmt.Sprintf("%#08x", key), "the command sees the user's SysV shared memory")
	caps, err := os.ReadFile(filepath.Join(step, "caps"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(caps)), "\n")
	require.Len(t, lines, 4, "CapInh, CapPrm, CapEff and CapAmb:\n%s", caps)
	for _, l := range lines {
		if os.Geteuid() != 0 {
			// The capability the launcher kept to mount /proc is not the command's.
			assert.Regexp(t, `:\s+0+$`, l, "a user's own process has no capability")
			continue
		}
		// Root's command is root, without what reaches past the sandbox: CAP_SYS_ADMIN
		// (open_tree would undo the launcher's mounts), CAP_SYS_PTRACE.
		name, hex, _ := strings.Cut(l, ":")
		set, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		require.NoError(t, err)
		assert.Zero(t, set&(1<<21|1<<19), "%s holds CAP_SYS_ADMIN or CAP_SYS_PTRACE: %x", name, set)
	}
}

// processesWith lists the processes of the machine whose argv holds marker.
func processesWith(marker string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		if data, err := os.ReadFile(d + "/cmdline"); err == nil && strings.Contains(string(data), marker) {
			found = append(found, d)
		}
	}
	return found
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// connectEnv makes the test binary a client that connects to the unix socket it names and
// says whether it could.
const connectEnv = "NORMA_TEST_CONNECT"

func connect(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("refused:", err)
		return 0
	}
	c.Close()
	fmt.Println("connected")
	return 0
}

// TestConfinedCommandCannotReachDaemons: a daemon of the user's listening on a unix socket
// (tmux, the session bus, docker, an ssh-agent) cannot be asked to act for a confined command:
// the launcher hides every such socket that exists when the command starts, one bound again
// during the run too.
func TestConfinedCommandCannotReachDaemons(t *testing.T) {
	requireLandlock(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	if ok, why, _ := sandbox.Namespaces(exe); !ok {
		t.Skip(why)
	}
	// Not t.TempDir: a socket's path must stay short (108 bytes).
	dir, err := os.MkdirTemp("", "norma-daemon-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "daemon.sock")
	accepted := make(chan struct{}, 4)
	listen := func() net.Listener {
		l, err := net.Listen("unix", sock)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- struct{}{}
				c.Close()
			}
		}()
		return l
	}
	l := listen()
	client := func(ctx context.Context) string {
		step := t.TempDir()
		cmd := exec.Command(exe)
		cmd.Dir = step
		cmd.Env = append(os.Environ(), connectEnv+"="+sock)
		out, err := os.Create(filepath.Join(step, "out"))
		require.NoError(t, err)
		defer out.Close()
		cmd.Stdout = out
		_, err = RunProcess(ctx, cmd, 10*time.Second)
		require.NoError(t, err)
		data, err := os.ReadFile(out.Name())
		require.NoError(t, err)
		return string(data)
	}

	// Unconfined, the client reaches the daemon: the test can tell.
	assert.Equal(t, "connected\n", client(stepCtx(t)))
	<-accepted

	ctx, s := confinedCtx(t, t.TempDir(), true)
	s.cfg.Namespace = true
	assert.Contains(t, client(ctx), "refused:")
	// The daemon starts again (its socket unlinked, bound anew, the mask gone with the old
	// one) while the run's launcher serves on: the next command finds it masked too.
	require.NoError(t, l.Close())
	listen()
	assert.Contains(t, client(ctx), "refused:", "a daemon that bound its socket again during the run")
	select {
	case <-accepted:
		t.Fatal("the daemon got a connection from a confined command")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestChecksCacheUsedSeesAnUnreadableCache: a check that takes the cache home's modes away
// (Landlock does not govern chmod; tools still open entries by name) does not make it look
// empty: a PASS after it is still confirmed with an empty cache home. Root reads everything:
// as root the test runs a copy of itself as nobody.
func TestChecksCacheUsedSeesAnUnreadableCache(t *testing.T) {
	if os.Geteuid() == 0 {
		out := runCopy(t, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, "^TestChecksCacheUsedSeesAnUnreadableCache$")
		assert.Contains(t, out, "--- PASS: TestChecksCacheUsedSeesAnUnreadableCache")
		return
	}
	home := t.TempDir()
	cache := filepath.Join(home, checkCacheDir)
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "go-build"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "go-build", "planted"), []byte("x"), 0o600))
	s := &stepSandbox{cfg: &Sandbox{Landlock: true, CacheDir: home}, private: &privateDir{}}
	ctx := withStepSandbox(context.Background(), s)
	used, _ := checksCache(ctx)
	assert.True(t, used)

	require.NoError(t, os.Chmod(cache, 0o300))
	used, _ = checksCache(ctx)
	assert.True(t, used, "an unreadable cache home counts as used")
}

// TestLauncherClearsIPCBetweenCommands: the commands of a run share their launcher's IPC
// namespace; the SysV objects an agent made are gone before the next command (a check that
// judges its work) starts.
func TestLauncherClearsIPCBetweenCommands(t *testing.T) {
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, false)
	if ok, why, _ := sandbox.Namespaces(s.cfg.Launcher); !ok {
		t.Skip("no pid namespace here: " + why)
	}
	s.cfg.Namespace = true
	run := func(script string) string {
		t.Helper()
		out, code := runScript(t, ctx, step, script)
		require.Equal(t, 0, code)
		return out
	}
	assert.Equal(t, "3\n", run(`ipcmk -M 4096 >/dev/null && ipcmk -Q >/dev/null && ipcmk -S 1 >/dev/null && ipcs -m -q -s | grep -c '^0x'`))
	assert.Equal(t, "0\n", run(`ipcs -m -q -s | grep -c '^0x'; exit 0`), "the next command finds the agent's SysV objects")
}

// TestLauncherCannotBeTraced: a confined command cannot read its launcher's /proc entries, not
// even those of the thread that started it, which is in the command's own Landlock domain:
// traced, that thread's memory would be the whole launcher's, whose other threads Landlock
// does not restrict. Without a pid namespace the launcher is the command's parent, and a user
// other than root has no capability that would stop the command otherwise: as root, the test
// runs a copy of itself as nobody.
func TestLauncherCannotBeTraced(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() == 0 {
		out := runCopy(t, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, "^TestLauncherCannotBeTraced$")
		assert.Contains(t, out, "--- PASS: TestLauncherCannotBeTraced")
		return
	}
	step := t.TempDir()
	ctx, _ := confinedCtx(t, step, true)
	cmd := exec.Command("sh", "-c", `tr '\0' ' ' < /proc/$PPID/cmdline; echo; `+
		`for t in /proc/$PPID/task/*; do cat $t/environ >/dev/null 2>&1 && echo "read $t"; done; exit 0`)
	cmd.Dir = step
	var out strings.Builder
	cmd.Stdout = &out
	_, err := RunProcess(ctx, cmd, 10*time.Second)
	require.NoError(t, err)
	parent, reads, _ := strings.Cut(out.String(), "\n")
	require.Contains(t, parent, sandbox.Entry, "the command's parent is its launcher")
	assert.Empty(t, reads, "the command reads what its launcher's threads hold")
}

// TestLauncherPassesOnNoInheritedDescriptor: a file descriptor git-norma inherited without
// close-on-exec goes no further than the launcher.
func TestLauncherPassesOnNoInheritedDescriptor(t *testing.T) {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0) // no O_CLOEXEC: as a caller may leave one
	require.NoError(t, err)
	defer syscall.Close(fd)
	step := t.TempDir()
	ctx, _ := confinedCtx(t, step, false)
	out, _ := runScript(t, ctx, step, fmt.Sprintf(`test -e /proc/$$/fd/%d && echo inherited; exit 0`, fd))
	assert.Empty(t, out)
}

// TestSocketMaskFollowsNoLink: a socket's path that now holds a symbolic link (the socket was
// bound there, then moved away: its path stays in the kernel's list) gets no mask: the mount
// would follow the link, and /dev/null over the file it names — a tool a check runs — would
// change what the check says.
func TestSocketMaskFollowsNoLink(t *testing.T) {
	requireLandlock(t)
	dir := t.TempDir()
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, true)
	if ok, why, _ := sandbox.Namespaces(s.cfg.Launcher); !ok {
		t.Skip("no pid namespace here: " + why)
	}
	s.cfg.Namespace = true
	tool := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(tool, []byte("the tool\n"), 0o644))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, os.Rename(sock, filepath.Join(dir, "moved")))
	require.NoError(t, os.Symlink(tool, sock))
	cmd := exec.Command("cat", sock)
	cmd.Dir = step
	var out strings.Builder
	cmd.Stdout = &out
	_, err = RunProcess(ctx, cmd, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "the tool\n", out.String())
}

// TestCommandCannotReschedule: a confined command cannot pin, lower or idle its launcher's
// threads, which the run's next command (a check) would inherit. A user's command holds no
// capability; root's loses CAP_SYS_NICE, and the kernel then refuses a scheduling change of
// a process holding capabilities the caller lacks.
func TestCommandCannotReschedule(t *testing.T) {
	requireLandlock(t)
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, true)
	if ok, why, _ := sandbox.Namespaces(s.cfg.Launcher); !ok {
		t.Skip("no pid namespace here: " + why)
	}
	s.cfg.Namespace = true
	out, _ := runScript(t, ctx, step, `for t in /proc/1/task/*; do id=${t##*/}; `+
		`renice -n 19 -p $id >/dev/null 2>&1 && echo "reniced $id"; taskset -p -c 0 $id >/dev/null 2>&1 && echo "pinned $id"; done; exit 0`)
	assert.Empty(t, out)
}
