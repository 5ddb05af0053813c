package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/loop"
)

// globalFlags work with every command, before or after it.
type globalFlags struct {
	NoColor bool        `name:"no-color" help:"Never colour the output (colour is only used on a terminal, and never with NO_COLOR set)."`
	Quiet   bool        `short:"q" xor:"verbosity" help:"Print no progress lines on stderr; errors and warnings still go there."`
	Verbose bool        `short:"v" xor:"verbosity" help:"Print more detail on stderr: the agents' output as it comes, and each step's log files as the step ends."`
	Version versionFlag `name:"version" help:"Print the git-norma version and exit (as git norma version does)."`
}

// newEnv builds the environment every command runs with from the global flags.
func newEnv(ctx context.Context, stdio IO, dir string, g globalFlags) *Env {
	tty := isTerminal(stdio.Err)
	return &Env{Ctx: ctx, IO: stdio, Dir: dir, Verbose: g.Verbose,
		Color: palette(colorEnabled(isTerminal(stdio.Out), g.NoColor, os.Getenv, gitColorBool)),
		Progress: &progressWriter{out: stdio.Err, quiet: g.Quiet, color: colorEnabled(tty, g.NoColor, os.Getenv, gitColorBool),
			tty: tty && os.Getenv("TERM") != "dumb", interval: time.Second, now: time.Now}}
}

// live is how a run or loop shows what happens: step lines, notices and warnings; with -v each
// step's log files; in a parallel loop (prefixTasks) each line starts with "[<task>] ".
func (e *Env) live(prefixTasks bool) loop.LiveFunc {
	return func(l loop.Live) { e.Progress.live(l, prefixTasks, e.Verbose, e.Dir) }
}

// done prints a progress line when a change went through (err is nil) and returns err.
func (e *Env) done(err error, format string, args ...any) error {
	if err == nil {
		e.Progress.Printf(format, args...)
	}
	return err
}

// progressWriter is the one writer progress goes through: whole lines to stderr, dropped with
// -q (except warnings), step lines coloured on a terminal, and while steps run a live line
// (output_live.go).
type progressWriter struct {
	mu    sync.Mutex
	out   io.Writer
	quiet bool
	color bool
	buf   []byte
	// tty says out is a terminal: the running steps are shown on a line redrawn in place.
	tty bool
	// interval is how often the running steps are looked at (0: only when tick is called).
	interval time.Duration
	// running are the steps under way; drawn says the live line is on the terminal now.
	running map[string]*runningStep
	drawn   bool
	ticking bool
	now     func() time.Time
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if !p.quiet {
			p.emit([]string{string(p.buf[:i])})
		}
		p.buf = p.buf[i+1:]
	}
}

// Printf writes one progress line.
func (p *progressWriter) Printf(format string, args ...any) {
	fmt.Fprintf(p, strings.TrimSuffix(format, "\n")+"\n", args...)
}

// Flush writes a last line that did not end in a newline, and clears the live line.
func (p *progressWriter) Flush() {
	if len(p.buf) > 0 {
		_, _ = p.Write([]byte("\n"))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.drawn = false
	}
}

// failureLines say why a Check failed: each failing check's command and exit code with the
// last tail lines of its output, then what changed since the previous try.
func failureLines(f *loop.Failure, tail int, pal palette) []string {
	if f == nil {
		return nil
	}
	var lines []string
	for _, c := range f.Failing {
		how := fmt.Sprintf("exited %d", c.ExitCode)
		if c.TimedOut {
			how = "timed out"
		}
		lines = append(lines, fmt.Sprintf("    %s %s: %s", c.CheckID, pal.paint(ansiRed, how), c.Cmd))
		for _, l := range c.Tail(tail) {
			lines = append(lines, "      | "+clip(l, 200))
		}
	}
	if f.Changes != "" {
		lines = append(lines, "    changed since the last try:")
		for _, l := range strings.Split(f.Changes, "\n") {
			lines = append(lines, "      "+clip(l, 200))
		}
	}
	return lines
}

// clip cuts text to n runes, marking the cut.
func clip(text string, n int) string {
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}

// stepLogs names the log files in dir, relative to cwd when inside it.
func stepLogs(dir, cwd string) string {
	shown := dir
	if rel, err := filepath.Rel(cwd, dir); err == nil && !strings.HasPrefix(rel, "..") {
		shown = rel
	}
	entries, _ := os.ReadDir(dir)
	var files []string
	for _, en := range entries {
		files = append(files, filepath.Join(shown, en.Name()))
	}
	if len(files) == 0 {
		return "    logs: " + shown + "/ (empty)"
	}
	return "    logs: " + strings.Join(files, " ")
}

// palette paints words when it is true; a false palette returns them unchanged.
type palette bool

const (
	ansiRed    = "31"
	ansiGreen  = "32"
	ansiYellow = "33"
	ansiDim    = "2"
)

func (p palette) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// status colours a verdict, a run status or a step status.
func (p palette) status(s string) string {
	switch s {
	case "PASS", "passed", "ok", "landed":
		return p.paint(ansiGreen, s)
	case "FAIL", "failed", "fail", "error":
		return p.paint(ansiRed, s)
	case "PARTIAL", "stopped", "stop":
		return p.paint(ansiYellow, s)
	case "skip", "skipped":
		return p.paint(ansiDim, s)
	}
	return s
}

// fileOf is the file an output stream writes to, if it is one.
func fileOf(w io.Writer) (*os.File, bool) {
	if p, ok := w.(pipeStops); ok {
		w = p.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// colorEnabled is git's rule for colour: only on a terminal, never with --no-color, NO_COLOR
// (any non-empty value) or TERM=dumb, and not when git's color.norma (or color.ui) says never.
func colorEnabled(tty, noColor bool, getenv func(string) string, gitColor func() bool) bool {
	if noColor || getenv("NO_COLOR") != "" || getenv("TERM") == "dumb" || !tty {
		return false
	}
	return gitColor()
}

// isTerminal says whether w is a character device other than /dev/null.
func isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// gitColorBool asks git once whether colour is wanted (color.norma, else color.ui; default on).
var gitColorBool = sync.OnceValue(func() bool {
	on, err := git.Runner{}.ColorBool(context.Background(), "color.norma", true)
	return err != nil || on
})
