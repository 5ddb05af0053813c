package loop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop/sandbox"
)

// TestMain lets the test binary act as the sandbox launcher, as git-norma's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Entry {
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	if path := os.Getenv(connectEnv); path != "" {
		os.Exit(connect(path))
	}
	os.Exit(m.Run())
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if abi, why := sandbox.ABI(); abi == 0 {
		t.Skip("the kernel cannot confine: " + why)
	}
}

// testSandbox contains a run's processes without confining them, as mode off does.
func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return &Sandbox{Launcher: exe, Network: true}
}

// stepCtx runs the processes started with it as a step's, contained but not confined.
func stepCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, _ := confinedCtx(t, t.TempDir(), false)
	return ctx
}

// confinedCtx runs the processes started with it as a step's, through the launcher.
func confinedCtx(t *testing.T, stepDir string, landlock bool, allowWrite ...string) (context.Context, *stepSandbox) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	s := &stepSandbox{cfg: &Sandbox{Launcher: exe, Landlock: landlock, Network: true, AllowWrite: allowWrite}, stepDir: stepDir, private: &privateDir{}, launcher: &launcher{}}
	t.Cleanup(s.private.remove)
	t.Cleanup(s.launcher.close)
	return withStepSandbox(context.Background(), s), s
}

// TestConfinedWrites: a confined process writes its working directory, the step dir and
// TMPDIR, and nothing else.
func TestConfinedWrites(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	work, step, outside := filepath.Join(root, "work"), filepath.Join(root, "step"), filepath.Join(root, "outside")
	for _, d := range []string{work, step, outside} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	ctx, _ := confinedCtx(t, step, true)
	script := `touch in-work && touch "$STEP/in-step" && touch "$TMPDIR/in-tmp" && echo ok; ` +
		`touch "$OUTSIDE/x" 2>/dev/null && echo escaped; exit 0`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "STEP="+step, "OUTSIDE="+outside)
	out, err := os.CreateTemp(step, "out")
	require.NoError(t, err)
	cmd.Stdout = out
	res, err := RunProcess(ctx, cmd, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	data, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(data))
	assert.NoFileExists(t, filepath.Join(outside, "x"))
}

// TestContainedOnTimeout: an agent that ignores SIGTERM and left a setsid child is stopped on
// timeout within twice the launcher's grace, and the child dies with it, named in the step's event.
func TestContainedOnTimeout(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid")
	}
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, false)
	pidFile := filepath.Join(step, "daemon.pid")
	cmd := exec.Command("sh", "-c", `trap "" TERM; setsid sh -c 'echo $$ > "$1"; exec sleep 61' x "$PIDFILE" & sleep 62`)
	cmd.Env = append(os.Environ(), "PIDFILE="+pidFile)
	cmd.Dir = step
	start := time.Now()
	res, err := RunProcess(ctx, cmd, 300*time.Millisecond)
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Less(t, time.Since(start), 300*time.Millisecond+2*stopGrace, "the launcher cleans up within twice its grace")
	ev, ok := s.event()
	require.True(t, ok, "an event names what was killed")
	assert.Contains(t, ev.Message, "sleep 61")
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid := strings.TrimSpace(string(data))
	_, err = os.Stat("/proc/" + pid)
	assert.True(t, os.IsNotExist(err), "the setsid child %s is dead", pid)
}

// TestLauncherStartErrors: a command that cannot be started is reported as exec would.
func TestLauncherStartErrors(t *testing.T) {
	step := t.TempDir()
	ctx, _ := confinedCtx(t, step, false)
	notExec := filepath.Join(step, "agent")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600))
	cmd := exec.Command(notExec)
	cmd.Dir = step
	_, err := RunProcess(ctx, cmd, time.Second)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrPermission)
	cmd = exec.Command(filepath.Join(step, "missing"))
	_, err = RunProcess(ctx, cmd, time.Second)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestPrivateDirBetweenSteps: a step's TMPDIR and object store come back empty for the next
// step; a confined process cannot replace them, and an unconfined one that replaced its
// TMPDIR by a link to the user's files loses only the link.
func TestPrivateDirBetweenSteps(t *testing.T) {
	requireLandlock(t)
	step := t.TempDir()
	user := filepath.Join(t.TempDir(), "user")
	require.NoError(t, os.Mkdir(user, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(user, "work.txt"), []byte("mine"), 0o600))
	private := &privateDir{}
	t.Cleanup(private.remove)
	run := func(landlock bool, script string) string {
		t.Helper()
		s := &stepSandbox{cfg: &Sandbox{Launcher: os.Args[0], Landlock: landlock, Network: true}, stepDir: step, private: private, launcher: &launcher{}}
		defer s.launcher.close()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = step
		cmd.Env = append(os.Environ(), "USERDIR="+user)
		var out strings.Builder
		cmd.Stdout = &out
		_, err := RunProcess(withStepSandbox(context.Background(), s), cmd, 10*time.Second)
		require.NoError(t, err)
		s.close()
		return out.String()
	}
	run(true, `mkdir -p "$TMPDIR/a/b" && echo x > "$TMPDIR/a/b/f" && echo x > "$GIT_OBJECT_DIRECTORY/o"`)
	dir := private.path
	require.NotEmpty(t, dir)
	assert.Equal(t, "", run(true, `ls -A "$TMPDIR" "$GIT_OBJECT_DIRECTORY" | grep -v ':$' | grep .`), "the next step finds both empty")
	assert.Equal(t, "kept\n", run(true, `rmdir "$TMPDIR" 2>/dev/null || mv "$TMPDIR" "$TMPDIR.x" 2>/dev/null || echo kept`))
	run(false, `rmdir "$TMPDIR" && ln -s "$USERDIR" "$TMPDIR" && echo more > "$TMPDIR/more.txt"`)
	assert.FileExists(t, filepath.Join(user, "work.txt"), "emptying followed no link")
	st, err := os.Lstat(filepath.Join(private.path, "tmp"))
	require.NoError(t, err)
	assert.True(t, st.IsDir(), "TMPDIR is a directory again")
	assert.Equal(t, dir, private.path, "one directory serves the whole run")
}

// TestStepFileNotThroughLink: output.json written where an agent left a link to a user's file
// replaces the link and leaves the file alone.
func TestStepFileNotThroughLink(t *testing.T) {
	step, user := t.TempDir(), filepath.Join(t.TempDir(), "bashrc")
	require.NoError(t, os.WriteFile(user, []byte("mine\n"), 0o600))
	out := filepath.Join(step, "output.json")
	require.NoError(t, os.Symlink(user, out))
	require.NoError(t, writeJSON(out, map[string]string{"status": "ok"}))
	data, err := os.ReadFile(user)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(data))
	data, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"status": "ok"`)
}

// TestLauncherConfinesEachCommandAlone: one launcher serves a run, and each command it starts
// is confined by its own policy only: the second command writes where the first could not,
// and not where the first could; an unconfined command after them writes anywhere — no
// command's confinement reaches the launcher or the next command.
func TestLauncherConfinesEachCommandAlone(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	a, b, step := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "step")
	for _, d := range []string{a, b, step} {
		require.NoError(t, os.Mkdir(d, 0o700))
	}
	ctx, s := confinedCtx(t, step, true)
	run := func(ctx context.Context, dir string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", `for d in "$A" "$B"; do touch "$d/x" 2>/dev/null && echo "wrote $(basename "$d")"; rm -f "$d/x"; done; exit 0`)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "A="+a, "B="+b)
		var out strings.Builder
		cmd.Stdout = &out
		res, err := RunProcess(ctx, cmd, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		return out.String()
	}
	assert.Equal(t, "wrote a\n", run(ctx, a))
	pid := s.launcher.srv.Pid()
	assert.Equal(t, "wrote b\n", run(ctx, b))
	open := &stepSandbox{cfg: &Sandbox{Launcher: s.cfg.Launcher, Network: true}, stepDir: step, private: s.private, launcher: s.launcher}
	assert.Equal(t, "wrote a\nwrote b\n", run(withStepSandbox(context.Background(), open), step))
	assert.Equal(t, pid, s.launcher.srv.Pid(), "one launcher started the three commands")
}

// TestLauncherEndsWhatItRuns: when git-norma lets go of its launcher (it ended, or died), the
// launcher kills the command it runs, and everything the command started, before it ends.
func TestLauncherEndsWhatItRuns(t *testing.T) {
	for _, namespace := range []bool{false, true} {
		t.Run(fmt.Sprintf("namespace=%v", namespace), func(t *testing.T) {
			step := t.TempDir()
			ctx, s := confinedCtx(t, step, false)
			if namespace {
				if ok, why, _ := sandbox.Namespaces(s.cfg.Launcher); !ok {
					t.Skip("no pid namespace here: " + why)
				}
				s.cfg.Namespace = true
			}
			marker := fmt.Sprintf("norma-orphan-%d-%d", os.Getpid(), time.Now().UnixNano())
			cmd := exec.Command("sh", "-c", `(setsid sh -c 'while :; do sleep 0.05; done' `+marker+` </dev/null >/dev/null 2>&1 &); touch started; sleep 60`)
			cmd.Dir = step
			done := make(chan error, 1)
			go func() {
				_, err := RunProcess(ctx, cmd, time.Minute)
				done <- err
			}()
			require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(step, "started")); return err == nil }, 10*time.Second, 10*time.Millisecond)
			require.Eventually(t, func() bool { return len(processesWith(marker)) > 0 }, 10*time.Second, 10*time.Millisecond)
			s.launcher.close()
			select {
			case err := <-done:
				require.Error(t, err, "the command did not end on its own")
			case <-time.After(10 * time.Second):
				t.Fatal("RunProcess still waits for a command whose launcher ended")
			}
			assert.Eventually(t, func() bool { return len(processesWith(marker)) == 0 }, 5*time.Second, 10*time.Millisecond,
				"what the command started outlived its launcher")
		})
	}
}

// TestLauncherNamesHugeLeftovers: a command that leaves processes with huge command lines
// behind still ends, and they are named, shortened: the launcher's answer fits in one message.
func TestLauncherNamesHugeLeftovers(t *testing.T) {
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, false)
	cmd := exec.Command("sh", "-c", `big=$(head -c 100000 /dev/zero | tr '\0' x); for i in 1 2 3 4; do (setsid sh -c 'sleep 30' "$big" </dev/null >/dev/null 2>&1 &); done; sleep 0.3`)
	cmd.Dir = step
	done := make(chan error, 1)
	go func() {
		_, err := RunProcess(ctx, cmd, 10*time.Second)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("RunProcess never learnt that the command ended")
	}
	ev, ok := s.event()
	require.True(t, ok, "the leftovers are named")
	assert.Contains(t, ev.Message, "killed 8 process(es)")
	assert.Contains(t, ev.Message, "(sleep 30)")
}

// TestStoppedLauncherEndsOnTimeout: without a pid namespace a command can stop its launcher
// (the thread that started it is in its Landlock domain, and a stop signal stops the whole
// process). On timeout the step still ends: the launcher that does not answer is killed, and
// so is the command's group.
func TestStoppedLauncherEndsOnTimeout(t *testing.T) {
	step := t.TempDir()
	ctx, _ := confinedCtx(t, step, landlockHere())
	marker := fmt.Sprintf("norma-stopper-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command("sh", "-c", `for t in /proc/$PPID/task/*; do kill -STOP "${t##*/}" 2>/dev/null; done; exec sleep 60 `+marker)
	cmd.Dir = step
	done := make(chan ProcessResult, 1)
	go func() {
		res, err := RunProcess(ctx, cmd, time.Second)
		assert.NoError(t, err)
		done <- res
	}()
	select {
	case res := <-done:
		assert.True(t, res.TimedOut)
	case <-time.After(20 * time.Second):
		t.Fatal("the step never ended: its launcher was stopped")
	}
	assert.Eventually(t, func() bool { return len(processesWith(marker)) == 0 }, 5*time.Second, 10*time.Millisecond,
		"the command outlived its stopped launcher")
}

// landlockHere says the kernel can confine.
func landlockHere() bool {
	abi, _ := sandbox.ABI()
	return abi > 0
}

// TestLauncherLimitsAreNotACommandsToChange: a command that lowers its launcher's resource
// limits (prlimit needs no more than the same user) does not pass them on to the next command
// of the run — a check that could not write a file, or start grep, would judge wrongly. Root's
// launcher puts them back (with CAP_SYS_RESOURCE); any other user's cannot raise a hard
// limit, and the next command starts through a new launcher, which the step says. As root, the test also runs a copy of
// itself as nobody.
func TestLauncherLimitsAreNotACommandsToChange(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	if os.Geteuid() == 0 && os.Getenv(unprivilegedEnv) == "" {
		t.Run("as nobody", func(t *testing.T) {
			out := runCopy(t, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}, "^TestLauncherLimitsAreNotACommandsToChange$")
			assert.Contains(t, out, "--- PASS: TestLauncherLimitsAreNotACommandsToChange")
		})
	}
	step := t.TempDir()
	ctx, s := confinedCtx(t, step, landlockHere())
	run := func(script string) (string, int) { return runScript(t, ctx, step, script) }
	_, code := run(`prlimit --pid $PPID --fsize=1:1 && prlimit --pid $PPID --fsize | tail -1`)
	require.Equal(t, 0, code, "the command could not lower its launcher's limit: nothing is tested")
	out, code := run(`echo judged > out && cat out`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "judged\n", out)
	// Too few descriptors for the next command's streams to reach the launcher at all.
	_, code = run(`prlimit --pid $PPID --nofile=1:`)
	require.Equal(t, 0, code)
	out, code = run(`echo started`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "started\n", out)
	if os.Geteuid() != 0 { // root puts the limit back where it has CAP_SYS_RESOURCE
		evs := s.events()
		i := slices.IndexFunc(evs, func(ev Event) bool { return ev.Type == TamperedEvent })
		require.GreaterOrEqual(t, i, 0, "the new launcher goes unsaid")
		assert.Contains(t, evs[i].Message, "resource limits")
	}
}

// runScript runs script with sh in dir as a step's command under ctx and returns its output
// and exit status; it must start.
func runScript(t *testing.T, ctx context.Context, dir, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout = &out
	res, err := RunProcess(ctx, cmd, 10*time.Second)
	require.NoError(t, err)
	return out.String(), res.ExitCode
}

// TestRestoreModesSideBySide: a step that starts while another step's agent has taken a hook's
// execute bit (loop --parallel) does not put that back once the other step's end undid it.
func TestRestoreModesSideBySide(t *testing.T) {
	hook := filepath.Join(t.TempDir(), "pre-merge-commit")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755))
	sb := &Sandbox{Modes: []string{hook}, CLISettings: &CLISettings{}}
	first, second := &stepSandbox{cfg: sb}, &stepSandbox{cfg: sb}
	first.recordStart()
	require.NoError(t, os.Chmod(hook, 0o644)) // the first step's agent
	second.recordStart()
	assert.Len(t, first.restoreModes(), 1)
	assert.Empty(t, second.restoreModes())
	st, err := os.Stat(hook)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
}
