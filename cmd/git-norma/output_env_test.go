package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	step := "003 check ok    PASS: 1/1 AC passed (17ms)\n"
	t.Run("plain", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out}
		_, _ = p.Write([]byte(step[:10]))
		_, _ = p.Write([]byte(step[10:] + "loop: task x\n"))
		assert.Equal(t, step+"loop: task x\n", out.String())
	})
	t.Run("quiet keeps warnings", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, quiet: true}
		p.Printf("paused: ...")
		_, _ = p.Write([]byte(step + "warning: notify command failed\n"))
		assert.Equal(t, "warning: notify command failed\n", out.String())
	})
	t.Run("quiet keeps a parallel run's warnings", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, quiet: true, color: true}
		_, _ = p.Write([]byte("[norma-a1] " + step + "[norma-a1] warning: notify command failed\n"))
		assert.Equal(t, "[norma-a1] \x1b[33mwarning:\x1b[0m notify command failed\n", out.String())
	})
	t.Run("colour", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, color: true}
		_, _ = p.Write([]byte(step + "008 act   stop  stop: no budget left (1ms)\n"))
		assert.Equal(t, "003 check \x1b[32mok\x1b[0m    \x1b[32mPASS\x1b[0m: 1/1 AC passed (17ms)\n"+
			"008 act   \x1b[33mstop\x1b[0m  stop: no budget left (1ms)\n", out.String())
	})
	t.Run("verbose names the logs", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, logs: func(task, index, role string) string { return "    logs: " + task + "/" + index + "-" + role }}
		_, _ = p.Write([]byte(step + "continuing with x\n"))
		assert.Equal(t, step+"    logs: /003-check\ncontinuing with x\n", out.String())
	})
	t.Run("parallel lines keep colour and logs", func(t *testing.T) {
		var out bytes.Buffer
		p := &progressWriter{out: &out, color: true, logs: func(task, index, role string) string { return "    logs: " + task + "/" + index + "-" + role }}
		_, _ = p.Write([]byte("[norma-a1] " + step))
		assert.Equal(t, "[norma-a1] 003 check \x1b[32mok\x1b[0m    \x1b[32mPASS\x1b[0m: 1/1 AC passed (17ms)\n"+
			"[norma-a1]     logs: norma-a1/003-check\n", out.String())
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

	out, _, code = run("land", "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "GIT-NORMA-LAND(1)"), out)

	out, _, code = run("help", "task", "add")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "GIT-NORMA-TASK(1)"), out)

	_, errOut, code = run("help", "nope")
	assert.Equal(t, 129, code)
	assert.Contains(t, errOut, "hint: try one of: init, task, run,")

	out, _, code = run("version", "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"go": "go`)
	for _, s := range []string{out} {
		assert.NotContains(t, s, "\x1b")
	}
}
