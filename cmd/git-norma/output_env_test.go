package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

func TestColorEnabled(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	yes := func() bool { return true }
	no := func() bool { return false }
	cases := []struct {
		name     string
		tty      bool
		noColor  bool
		getenv   func(string) string
		gitColor func() bool
		want     bool
	}{
		{"terminal", true, false, env("TERM", "xterm"), yes, true},
		{"not a terminal", false, false, env(), yes, false},
		{"--no-color", true, true, env(), yes, false},
		{"NO_COLOR", true, false, env("NO_COLOR", "1"), yes, false},
		{"NO_COLOR empty is unset", true, false, env("NO_COLOR", ""), yes, true},
		{"TERM=dumb", true, false, env("TERM", "dumb"), yes, false},
		{"color.norma=never", true, false, env(), no, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, colorEnabled(c.tty, c.noColor, c.getenv, c.gitColor))
		})
	}
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, isTerminal(&bytes.Buffer{}))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w))
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, isTerminal(null), "/dev/null is a character device, not a terminal")
}

func TestProgressWriter(t *testing.T) {
	check := loop.Live{Kind: loop.StepEnded, TaskID: "norma-a1", Index: 3, Role: loop.RoleCheck, Status: "ok",
		Verdict: "PASS", Summary: "PASS: 1/1 AC passed", Duration: 17 * time.Millisecond}
	const line = "003 check PASS  1/1 AC passed (17ms)\n"
	t.Run("plain", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out}
		p.live(check, false, false, "")
		_, _ = p.Write([]byte("paused"))
		_, _ = p.Write([]byte(": x\n"))
		p.live(loop.Live{Kind: loop.StepStarted, Index: 4, Role: loop.RoleAct}, false, false, "")
		p.live(loop.Live{Kind: loop.Notice, TaskID: "norma-a1", Text: "loop: task x"}, false, false, "")
		assert.Equal(t, line+"paused: x\nloop: task x\n", out.String())
	})
	t.Run("quiet keeps warnings", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, quiet: true}
		p.Printf("paused: ...")
		p.live(check, false, false, "")
		p.live(loop.Live{Kind: loop.Notice, Text: "notify command failed", Warning: true}, false, false, "")
		assert.Equal(t, "warning: notify command failed\n", out.String())
	})
	t.Run("quiet keeps a parallel run's warnings", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, quiet: true, color: true}
		p.live(check, true, false, "")
		p.live(loop.Live{Kind: loop.Notice, TaskID: "norma-a1", Text: "notify command failed", Warning: true}, true, false, "")
		assert.Equal(t, "[norma-a1] \x1b[33mwarning:\x1b[0m notify command failed\n", out.String())
	})
	t.Run("colour", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, color: true}
		p.live(check, false, false, "")
		p.live(loop.Live{Kind: loop.StepEnded, Index: 8, Role: loop.RoleAct, Status: "stop", Summary: "stop: no budget left", Duration: time.Millisecond}, false, false, "")
		assert.Equal(t, "003 check \x1b[32mPASS\x1b[0m  1/1 AC passed (17ms)\n"+
			"008 act   \x1b[33mstop\x1b[0m  stop: no budget left (1ms)\n", out.String())
	})
	t.Run("a failed check says why", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, color: true}
		fail := loop.Live{Kind: loop.StepEnded, Index: 7, Role: loop.RoleCheck, Status: "ok", Verdict: "FAIL",
			Summary: "FAIL: 0/1 AC passed, plan MATCH", Duration: 20 * time.Millisecond,
			Failure: &loop.Failure{Failing: []loop.FailedCheck{{CheckID: "CHK-AC-1", Cmd: "make test", ExitCode: 2,
				OutputTail: "a\nb\nc\nexpected 3, got 4\n"}}, Changes: "CHK-AC-1: - expected 2, got 4\nCHK-AC-1: + expected 3, got 4"}}
		p.live(fail, false, false, "")
		assert.Equal(t, "007 check \x1b[31mFAIL\x1b[0m  0/1 AC passed, plan MATCH (20ms)\n"+
			"    CHK-AC-1 \x1b[31mexited 2\x1b[0m: make test\n      | b\n      | c\n      | expected 3, got 4\n"+
			"    changed since the last try:\n      CHK-AC-1: - expected 2, got 4\n      CHK-AC-1: + expected 3, got 4\n", out.String())
	})
	t.Run("notices follow their step", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out}
		do := loop.Live{Kind: loop.StepEnded, Index: 2, Role: loop.RoleDo, Status: "ok", Summary: "done", Duration: time.Second,
			Notices: []loop.Event{{Type: loop.DeniedEvent, Message: strings.Repeat("x", 500)}}}
		p.live(do, false, false, "")
		assert.Equal(t, "002 do    ok    done (1s)\n    sandbox_denied: "+strings.Repeat("x", 399)+"…\n", out.String())
	})
	t.Run("verbose names the logs", func(t *testing.T) {
		var out bytes.Buffer
		cwd := t.TempDir()
		logs := filepath.Join(cwd, ".norma", "runs", "r-1", "steps", "003-check", "logs")
		require.NoError(t, os.MkdirAll(logs, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(logs, "stdout.txt"), nil, 0o600))
		withLogs := check
		withLogs.LogDir = logs
		p := &progressWriter{out: &out, color: true}
		p.live(withLogs, true, true, cwd)
		assert.Equal(t, "[norma-a1] 003 check \x1b[32mPASS\x1b[0m  1/1 AC passed (17ms)\n"+
			"[norma-a1]     logs: .norma/runs/r-1/steps/003-check/logs/stdout.txt\n", out.String())
	})
	t.Run("parallel runs interleave whole lines", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out}
		var wg sync.WaitGroup
		for _, task := range []string{"a", "b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					p.live(loop.Live{Kind: loop.Notice, TaskID: task, Text: fmt.Sprintf("line %d end", i)}, true, false, "")
				}
			}()
		}
		wg.Wait()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		assert.Len(t, lines, 400)
		for _, l := range lines {
			assert.Regexp(t, `^\[[ab]\] line \d+ end$`, l)
		}
	})
	t.Run("flush", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out}
		_, _ = p.Write([]byte("no newline"))
		assert.Empty(t, out.String())
		p.Flush()
		assert.Equal(t, "no newline\n", out.String())
	})
}

// TestHelpConventions drives Main: -h is short usage with examples, --help and help the
// manual, a bad topic a usage error; none of it coloured or on stderr.
func TestHelpConventions(t *testing.T) {
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return out.String(), errb.String(), code
	}
	out, errOut, code := run("land", "-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "Usage: git norma land <task>")
	assert.Contains(t, out, "\nExamples:\n  git norma land norma-k3x9\n")
	assert.Contains(t, out, "The manual: git norma help land (or: man git-norma-land)")

	// the hidden hook command has no manual page, and so no examples: its usage alone
	out, errOut, code = run("hook", "-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "Usage: git norma hook <name>")
	assert.NotContains(t, out, "Examples:")

	out, _, code = run("land", "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "GIT-NORMA-LAND(1)"), out)

	out, _, code = run("help", "task", "add")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "GIT-NORMA-TASK(1)"), out)

	_, errOut, code = run("help", "nope")
	assert.Equal(t, 129, code)
	assert.Contains(t, errOut, "hint: try one of: init, task, run,")
	assert.Equal(t, 1, strings.Count(errOut, "config"), "the config command's page and the config file's are one topic: %s", errOut)

	out, _, code = run("version", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"go": "go`)
	for _, s := range []string{out} {
		assert.NotContains(t, s, "\x1b")
	}
}

// kong sizes -h to the terminal only when it writes to an *os.File: it gets the files under
// the streams' SIGPIPE wrapper.
func TestParseArgsGivesKongTheFiles(t *testing.T) {
	var cli CLI
	kctx, err := parseArgs(&cli, []string{"version"}, IO{Out: pipeStops{os.Stdout, func() {}}, Err: pipeStops{os.Stderr, func() {}}})
	require.NoError(t, err)
	assert.Same(t, os.Stdout, kctx.Stdout)
	assert.Same(t, os.Stderr, kctx.Stderr)
}
