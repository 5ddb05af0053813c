package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execFixture is a step directory laid out the way the engine lays it out: input.json written,
// logs/stdout.txt and logs/stderr.txt open, and a separate workspace directory.
type execFixture struct {
	// ctx runs the agent as a step's, through the launcher (without Landlock).
	ctx     context.Context
	req     Request
	dir     string // scripts live here, outside the workspace
	workDir string
}

func newExecFixture(t *testing.T, timeout time.Duration) *execFixture {
	t.Helper()
	root := t.TempDir()
	stepDir := filepath.Join(root, "steps", "002-do")
	workDir := filepath.Join(root, "workspace")
	require.NoError(t, os.MkdirAll(filepath.Join(stepDir, "logs"), 0o700))
	require.NoError(t, os.MkdirAll(workDir, 0o700))
	in := Input{Run: RunRef{ID: "r-exec", Iteration: 1}, Task: TaskInput{ID: testTaskID, Title: "exec"},
		Step: StepRef{Index: 2, Name: RoleDo, Dir: stepDir}}
	inputPath := filepath.Join(stepDir, "input.json")
	require.NoError(t, writeJSON(inputPath, in))
	s := &stepRun{dir: stepDir}
	require.NoError(t, s.open())
	t.Cleanup(func() { s.stdout.Close(); s.stderr.Close() })
	ctx, _ := confinedCtx(t, stepDir, false)
	return &execFixture{
		ctx: ctx, dir: root, workDir: workDir,
		req: Request{Input: in, InputPath: inputPath, StepDir: stepDir, WorkDir: workDir,
			Stdout: s.stdout, Stderr: s.stderr, StdoutPath: s.stdout.Name(), Timeout: timeout},
	}
}

func (f *execFixture) agent(t *testing.T, body string) ExecAgent {
	t.Helper()
	return ExecAgent{Argv: []string{writeScript(t, f.dir, "agent.sh", body)}}
}

func (f *execFixture) log(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.req.StepDir, "logs", name))
	require.NoError(t, err)
	return string(data)
}

func requireProtocolError(t *testing.T, err error, kind string) *ProtocolError {
	t.Helper()
	require.Error(t, err)
	var pe *ProtocolError
	require.True(t, errors.As(err, &pe), "want *ProtocolError, got %T: %v", err, err)
	require.Equal(t, kind, pe.Kind, "error: %v", err)
	return pe
}

func TestExecAgentRun(t *testing.T) {
	const validDo = `{"status":"ok","summary":{"text":"did it"},"do":{"execution":{"executed_step_ids":["DO-1"],"commands":[{"id":"CMD-1","cmd":"make","exit_code":0}]}}}`
	tests := []struct {
		name     string
		body     string
		wantKind string // "" means success
		wantMsg  string
		check    func(t *testing.T, f *execFixture, out Output)
	}{
		{
			name: "valid output is parsed",
			body: "cat >/dev/null\necho 'working...' >&2\ncat <<'EOF'\n" + validDo + "\nEOF",
			check: func(t *testing.T, f *execFixture, out Output) {
				assert.Equal(t, StatusOK, out.Status)
				require.NotNil(t, out.Do)
				assert.Equal(t, []string{"DO-1"}, out.Do.Execution.ExecutedStepIDs)
				require.Len(t, out.Do.Execution.Commands, 1)
				require.NotNil(t, out.Do.Execution.Commands[0].ExitCode)
				assert.Equal(t, 0, *out.Do.Execution.Commands[0].ExitCode)
				assert.Equal(t, "working...\n", f.log(t, "stderr.txt"), "stderr is captured")
				assert.Contains(t, f.log(t, "stdout.txt"), `"did it"`, "stdout is captured")
			},
		},
		{
			name: "valid output surrounded by whitespace",
			body: "printf '\\n\\n  %s  \\n\\n' '" + validDo + "'",
			check: func(t *testing.T, _ *execFixture, out Output) {
				assert.Equal(t, StatusOK, out.Status)
			},
		},
		{
			name: "agent gets the input on stdin, the NORMA_ environment and the workspace as cwd",
			body: `cat > "$NORMA_STEP_DIR/seen-stdin.json"
{ pwd; echo "$NORMA_RUN_ID|$NORMA_TASK_ID|$NORMA_ROLE|$NORMA_INPUT|$NORMA_WORKSPACE|${GIT_DIR:-unset}|$EXTRA"; } > "$NORMA_STEP_DIR/seen-env.txt"
echo '{"status":"ok","do":{"execution":{}}}'`,
			check: func(t *testing.T, f *execFixture, out Output) {
				stdin, err := os.ReadFile(filepath.Join(f.req.StepDir, "seen-stdin.json"))
				require.NoError(t, err)
				input, err := os.ReadFile(f.req.InputPath)
				require.NoError(t, err)
				assert.Equal(t, string(input), string(stdin))
				env, err := os.ReadFile(filepath.Join(f.req.StepDir, "seen-env.txt"))
				require.NoError(t, err)
				wd, err := filepath.EvalSymlinks(f.workDir)
				require.NoError(t, err)
				want := wd + "\n" + strings.Join([]string{"r-exec", testTaskID, "do", f.req.InputPath, f.workDir, "unset", "extra-value"}, "|") + "\n"
				assert.Equal(t, want, string(env))
			},
		},
		{name: "invalid JSON", body: "echo 'this is not json'", wantKind: ErrKindInvalidJSON, wantMsg: "this is not json"},
		{name: "empty stdout", body: "cat >/dev/null; echo 'only stderr' >&2", wantKind: ErrKindInvalidJSON, wantMsg: "printed nothing"},
		{name: "whitespace-only stdout", body: "printf '\\n  \\n'", wantKind: ErrKindInvalidJSON, wantMsg: "printed nothing"},
		{name: "trailing garbage", body: `echo '{"status":"ok"} and then some'`, wantKind: ErrKindInvalidJSON, wantMsg: "data after the JSON object"},
		{name: "two JSON objects", body: `echo '{"status":"ok"}'; echo '{"status":"ok"}'`, wantKind: ErrKindInvalidJSON, wantMsg: "data after the JSON object"},
		{name: "log lines before the JSON", body: `echo 'thinking...'; echo '{"status":"ok"}'`, wantKind: ErrKindInvalidJSON},
		{name: "JSON array instead of object", body: `echo '[1,2]'`, wantKind: ErrKindInvalidJSON},
		{name: "truncated JSON", body: `printf '{"status":"ok"'`, wantKind: ErrKindInvalidJSON},
		{name: "wrong field type", body: `echo '{"status":7}'`, wantKind: ErrKindInvalidJSON},
		{name: "non-zero exit", body: `echo '{"status":"ok"}'; echo boom >&2; exit 3`, wantKind: ErrKindExit, wantMsg: "status 3",
			check: func(t *testing.T, f *execFixture, _ Output) {
				assert.Equal(t, "boom\n", f.log(t, "stderr.txt"), "stderr is kept for the failed step")
			}},
		{name: "killed by a signal", body: `kill -9 $$`, wantKind: ErrKindExit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The agent starts from the environment it is given (the app's, without a hook's
			// GIT_DIR), not from this process's.
			t.Setenv("GIT_DIR", "/not/the/workspace/.git")
			f := newExecFixture(t, 10*time.Second)
			f.req.Env = []string{"PATH=" + os.Getenv("PATH")}
			a := f.agent(t, tc.body)
			a.Env = []string{"EXTRA=extra-value"}
			out, err := a.Run(f.ctx, f.req)
			if tc.wantKind == "" {
				require.NoError(t, err)
			} else {
				pe := requireProtocolError(t, err, tc.wantKind)
				assert.Contains(t, pe.Msg, tc.wantMsg)
			}
			if tc.check != nil {
				tc.check(t, f, out)
			}
		})
	}
}

// In the check step the engine logs the check commands into logs/stdout.txt before the agent
// runs; the agent's answer is only what it printed itself (regression: the whole file was parsed).
func TestExecAgentReadsOnlyItsOwnOutput(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKind string
	}{
		{name: "answer after earlier log content", body: `echo '{"status":"ok","check":{"verdict":{"status":"PASS"}}}'`},
		{name: "no answer is still empty stdout", body: `true`, wantKind: ErrKindInvalidJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newExecFixture(t, 10*time.Second)
			earlier := "==> CHK-AC-1-1: go test ./...\nok  \tpkg\t0.01s\n\n<== CHK-AC-1-1: exit 0 in 10ms\n"
			_, err := fmt.Fprint(f.req.Stdout, earlier)
			require.NoError(t, err)
			out, err := f.agent(t, tc.body).Run(f.ctx, f.req)
			if tc.wantKind != "" {
				pe := requireProtocolError(t, err, tc.wantKind)
				assert.Contains(t, pe.Msg, "printed nothing")
				return
			}
			require.NoError(t, err)
			require.NotNil(t, out.Check)
			assert.Equal(t, VerdictPass, out.Check.Verdict.Status)
			assert.True(t, strings.HasPrefix(f.log(t, "stdout.txt"), earlier), "the earlier log is kept")
		})
	}
}

func TestExecAgentStartFailures(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\necho '{}'\n"), 0o644))
	tests := []struct {
		name    string
		argv    []string
		wantMsg []string
	}{
		{name: "missing binary by path", argv: []string{filepath.Join(dir, "no-such-agent")},
			wantMsg: []string{"no-such-agent", "command not found", ".norma/config.json"}},
		{name: "missing binary on PATH", argv: []string{"norma-no-such-agent-xyz", "--flag"},
			wantMsg: []string{"norma-no-such-agent-xyz", "command not found"}},
		{name: "file not executable", argv: []string{notExec}, wantMsg: []string{"permission denied", "chmod +x"}},
		{name: "empty argv", argv: nil, wantMsg: []string{"no command configured"}},
		{name: "empty program", argv: []string{""}, wantMsg: []string{"no command configured"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newExecFixture(t, 10*time.Second)
			start := time.Now()
			_, err := ExecAgent{Argv: tc.argv}.Run(f.ctx, f.req)
			pe := requireProtocolError(t, err, ErrKindStart)
			for _, m := range tc.wantMsg {
				assert.Contains(t, pe.Msg, m)
			}
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

func TestExecAgentOutputTooLarge(t *testing.T) {
	const size = 64 << 20
	f := newExecFixture(t, 30*time.Second)
	a := f.agent(t, fmt.Sprintf("cat >/dev/null; head -c %d /dev/zero", size))

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := a.Run(f.ctx, f.req)
	runtime.ReadMemStats(&after)

	pe := requireProtocolError(t, err, ErrKindTooLarge)
	assert.Contains(t, pe.Msg, "8 MiB")
	// The whole output is in the log file, not in memory.
	st, statErr := os.Stat(f.req.StdoutPath)
	require.NoError(t, statErr)
	assert.EqualValues(t, size, st.Size())
	inuse := int64(after.HeapInuse) - int64(before.HeapInuse)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("heap in use grew by %d KiB, %d KiB allocated in total, for a %d MiB output", inuse>>10, allocated>>10, size>>20)
	// Reading up to MaxOutputBytes+1 to detect the overflow is allowed; holding the output is not.
	assert.Less(t, inuse, int64(size/2), "HeapInuse must stay well below the output size")
	assert.Less(t, allocated, uint64(size), "the output must never be read into memory whole")
}

func TestExecAgentOutputSizeLimit(t *testing.T) {
	const obj = `{"status":"ok","do":{"execution":{}}}`
	tests := []struct {
		name     string
		total    int
		wantKind string
	}{
		{name: "exactly MaxOutputBytes is accepted", total: MaxOutputBytes},
		{name: "one byte more is too large", total: MaxOutputBytes + 1, wantKind: ErrKindTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newExecFixture(t, 30*time.Second)
			pad := tc.total - len(obj)
			a := f.agent(t, fmt.Sprintf("printf '%%s' '%s'; head -c %d /dev/zero | tr '\\000' ' '", obj, pad))
			out, err := a.Run(f.ctx, f.req)
			if tc.wantKind != "" {
				requireProtocolError(t, err, tc.wantKind)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, StatusOK, out.Status)
		})
	}
}

// processGone reports whether pid no longer runs. A killed process whose parent died is
// reparented to init; if init has not reaped it yet it is a zombie, which is dead too.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

func requireGone(t *testing.T, what string, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return processGone(pid) }, 3*time.Second, 10*time.Millisecond,
		"%s (pid %d) is still running", what, pid)
}

// readPID reads a pid file written by a test agent, waiting for it to be complete.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	}, 5*time.Second, 10*time.Millisecond, "pid file %s", path)
	return pid
}

// hangingAgent starts a background child, records both pids in the workspace and hangs.
const hangingAgent = `sleep 300 &
echo $! > child.pid
echo $$ > agent.pid
sleep 300
echo '{"status":"ok"}'`

// stopGrace is the launcher's time between the SIGTERM it forwards and its SIGKILL.
const stopGrace = time.Second

func TestExecAgentTimeoutKillsProcessGroup(t *testing.T) {
	const timeout = 300 * time.Millisecond
	tests := []struct {
		name    string
		body    string
		minTime time.Duration
	}{
		{name: "agent and child die on SIGTERM", body: hangingAgent, minTime: timeout},
		{name: "agent ignoring SIGTERM is killed after the grace period", body: "trap '' TERM\n" + hangingAgent, minTime: timeout + stopGrace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newExecFixture(t, timeout)
			a := f.agent(t, tc.body)
			start := time.Now()
			_, err := a.Run(f.ctx, f.req)
			elapsed := time.Since(start)

			pe := requireProtocolError(t, err, ErrKindTimeout)
			assert.Contains(t, pe.Msg, timeout.String())
			assert.GreaterOrEqual(t, elapsed, tc.minTime)
			assert.Less(t, elapsed, tc.minTime+3*time.Second, "the call must return soon after the timeout")
			requireGone(t, "agent", readPID(t, filepath.Join(f.workDir, "agent.pid")))
			requireGone(t, "agent's child", readPID(t, filepath.Join(f.workDir, "child.pid")))
		})
	}
}

func TestExecAgentContextCancelKillsProcessGroup(t *testing.T) {
	f := newExecFixture(t, 0) // no timeout: only the context ends it
	a := f.agent(t, hangingAgent)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, f.req)
		done <- err
	}()
	agentPID := readPID(t, filepath.Join(f.workDir, "agent.pid"))
	childPID := readPID(t, filepath.Join(f.workDir, "child.pid"))
	require.False(t, processGone(agentPID), "agent should be running before the cancel")
	cancelled := time.Now()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(stopGrace + 5*time.Second):
		require.FailNow(t, "Run did not return after the context was cancelled")
	}
	assert.Less(t, time.Since(cancelled), 3*time.Second)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, IsProtocolError(err), "an interruption is not the agent's fault")
	requireGone(t, "agent", agentPID)
	requireGone(t, "agent's child", childPID)
}

// A process that exits normally but leaves a child behind must not leave the child running.
func TestExecAgentStrayChildKilledAfterExit(t *testing.T) {
	f := newExecFixture(t, 10*time.Second)
	a := f.agent(t, `sleep 300 &
echo $! > child.pid
echo '{"status":"ok","do":{"execution":{}}}'`)
	start := time.Now()
	out, err := a.Run(f.ctx, f.req)
	require.NoError(t, err)
	assert.Equal(t, StatusOK, out.Status)
	assert.Less(t, time.Since(start), 5*time.Second, "a stray child holding stdout must not block Run")
	requireGone(t, "stray child", readPID(t, filepath.Join(f.workDir, "child.pid")))
}

func TestDecodeOutput(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		wantKind string
		want     string
	}{
		{name: "object", data: `{"status":"stop","stop_reason":"verify_missing"}`, want: StatusStop},
		{name: "object with newline", data: "{\"status\":\"ok\"}\n", want: StatusOK},
		{name: "unknown fields are ignored", data: `{"status":"ok","extra":{"x":1}}`, want: StatusOK},
		{name: "empty", data: "", wantKind: ErrKindInvalidJSON},
		{name: "null", data: "null", want: ""},
		{name: "garbage after", data: `{"status":"ok"}x`, wantKind: ErrKindInvalidJSON},
		{name: "invalid UTF-8 snippet does not break the message", data: "\xff\xfe not json", wantKind: ErrKindInvalidJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := DecodeOutput([]byte(tc.data))
			if tc.wantKind != "" {
				pe := requireProtocolError(t, err, tc.wantKind)
				assert.True(t, strings.ToValidUTF8(pe.Msg, "") == pe.Msg, "message must be valid UTF-8")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Status)
		})
	}
}

func TestExecAgentString(t *testing.T) {
	assert.Equal(t, `exec ["./agent" "--fast"]`, ExecAgent{Argv: []string{"./agent", "--fast"}}.String())
}

// A process RunProcess starts is in a session other than git-norma's, which has no
// controlling terminal, so an agent cannot reach the user's (TIOCSTI would type into the
// user's shell).
func TestRunProcessStartsInASessionOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	require.NoError(t, err)
	defer out.Close()
	cmd := exec.Command("sh", "-c", `awk '{print $6, $7}' /proc/$$/stat`)
	cmd.Stdout = out
	ctx, _ := confinedCtx(t, dir, false)
	res, err := RunProcess(ctx, cmd, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	data, err := os.ReadFile(out.Name())
	require.NoError(t, err)
	sid, tty, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	self, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(self[bytes.LastIndexByte(self, ')')+1:]))
	assert.NotEqual(t, fields[3], sid, "not git-norma's session")
	assert.Equal(t, "0", tty, "no controlling terminal")
}
