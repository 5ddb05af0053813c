package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/gitnorma"
)

// globalFlags work with every command, before or after it.
type globalFlags struct {
	NoColor bool `name:"no-color" help:"Never colour the output (colour is only used on a terminal, and never with NO_COLOR set)."`
	Quiet   bool `short:"q" xor:"verbosity" help:"Print no progress lines on stderr; errors and warnings still go there."`
	Verbose bool `short:"v" xor:"verbosity" help:"Print more detail on stderr: each step's log files as the step ends."`
}

// newEnv builds the environment every command runs with from the global flags.
func newEnv(ctx context.Context, stdio IO, dir string, g globalFlags) *Env {
	col := colors{
		Out: colorEnabled(isTerminal(stdio.Out), g.NoColor, os.Getenv, gitColorBool),
		Err: colorEnabled(isTerminal(stdio.Err), g.NoColor, os.Getenv, gitColorBool),
	}
	return &Env{Ctx: ctx, IO: stdio, Dir: dir, Verbose: g.Verbose, Color: col,
		Progress: &progressWriter{out: stdio.Err, quiet: g.Quiet, color: col.Err}}
}

// stepProgress is the progress writer of a run or loop: with -v it also names each step's
// log files, found through the task lock this process holds (which records the run).
func (e *Env) stepProgress(app *gitnorma.App) io.Writer {
	if e.Verbose {
		e.Progress.logs = func(task, index, role string) string { return stepLogs(app, e.Dir, task, index, role) }
	}
	return e.Progress
}

// stepLogs lists the log files of step NNN-role of this process's run in progress (of task,
// when parallel runs prefix their lines with it).
func stepLogs(app *gitnorma.App, cwd, task, index, role string) string {
	var h gitnorma.LockHolder
	if task != "" {
		h, _ = gitnorma.ReadLockHolder(app.TaskLockPath(task))
	} else {
		for _, l := range app.LiveRuns() {
			if l.PID == os.Getpid() && l.RunID != "" {
				h = l
				break
			}
		}
	}
	if h.RunID == "" {
		return ""
	}
	dir := app.Repo.Path("runs", h.RunID, "steps", index+"-"+role, "logs")
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

// progressWriter is the one writer progress goes through: whole lines to stderr, dropped with
// -q (except warnings), step lines coloured on a terminal, followed by their log files with -v.
type progressWriter struct {
	mu    sync.Mutex
	out   io.Writer
	quiet bool
	color bool
	logs  func(task, index, role string) string
	buf   []byte
}

// stepLineRE matches the engine's step lines: "003 check ok    PASS: 1/1 AC passed (17ms)",
// prefixed with "[<task>] " in a parallel loop.
var stepLineRE = regexp.MustCompile(`^(\[(\S+)\] )?(\d{3}) (plan|do|check|act)(\s+)(\S+)(\s+)(PASS|FAIL|PARTIAL)?`)

func (p *progressWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := string(p.buf[:i])
		p.buf = p.buf[i+1:]
		p.line(line)
	}
}

// Printf writes one progress line.
func (p *progressWriter) Printf(format string, args ...any) {
	fmt.Fprintf(p, strings.TrimSuffix(format, "\n")+"\n", args...)
}

// Flush writes a last line that did not end in a newline.
func (p *progressWriter) Flush() {
	if len(p.buf) > 0 {
		_, _ = p.Write([]byte("\n"))
	}
}

func (p *progressWriter) line(l string) {
	task, body := taskPrefix(l) // "[<task>] " in a parallel loop
	if p.quiet && !strings.HasPrefix(body, "warning:") {
		return
	}
	m := stepLineRE.FindStringSubmatch(l)
	if m != nil && p.color {
		pal := palette(true)
		l = m[1] + m[3] + " " + m[4] + m[5] + pal.status(m[6]) + m[7] + pal.status(m[8]) + l[len(m[0]):]
	}
	if strings.HasPrefix(body, "warning:") && p.color {
		l = task + palette(true).paint(ansiYellow, "warning:") + body[len("warning:"):]
	}
	fmt.Fprintln(p.out, l)
	if m != nil && p.logs != nil {
		if s := p.logs(m[2], m[3], m[4]); s != "" {
			fmt.Fprintln(p.out, m[1]+s)
		}
	}
}

// taskPrefix splits a line into its "[<task>] " prefix (empty when there is none) and the rest.
func taskPrefix(l string) (prefix, body string) {
	if strings.HasPrefix(l, "[") {
		if i := strings.Index(l, "] "); i > 1 && !strings.ContainsAny(l[1:i], " []") {
			return l[:i+2], l[i+2:]
		}
	}
	return "", l
}

// colors says which of the two streams may carry ANSI colour.
type colors struct{ Out, Err bool }

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
	f, ok := w.(*os.File)
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
	out, err := exec.Command("git", "config", "--get-colorbool", "color.norma", "true").Output()
	return err != nil || strings.TrimSpace(string(out)) != "false"
})
