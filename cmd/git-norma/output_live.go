package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/agent"
)

// heartbeatEvery is how often a step still running is said again when stderr is not a
// terminal (a CI log): often enough to see it is alive, rarely enough to stay readable.
const heartbeatEvery = 30 * time.Second

// runningStep is a step under way, as the live line and the heartbeat show it.
type runningStep struct {
	live    loop.Live
	prefix  string
	started time.Time
	beat    time.Time
	// verbose streams the step's output; offsets are how far each log was shown.
	verbose bool
	offsets map[string]int64
}

// live renders what a run reports: each step's final line (with why a Check failed, and with
// -v its log files), notices and warnings; while a step runs, a line redrawn in place on a
// terminal, a heartbeat elsewhere, and with -v the agent's output as it comes. Lines of
// parallel runs interleave whole.
func (p *progressWriter) live(l loop.Live, prefixTasks, verbose bool, cwd string) {
	if p.quiet && !l.Warning {
		return
	}
	prefix := ""
	if prefixTasks && l.TaskID != "" {
		prefix = "[" + l.TaskID + "] "
	}
	key := fmt.Sprintf("%s/%d", l.TaskID, l.Index)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch l.Kind {
	case loop.StepStarted:
		if p.running == nil {
			p.running = map[string]*runningStep{}
		}
		now := p.clock()
		p.running[key] = &runningStep{live: l, prefix: prefix, started: now, beat: now, verbose: verbose, offsets: map[string]int64{}}
		p.startTicking()
		p.draw()
	case loop.StepEnded:
		if r := p.running[key]; r != nil {
			p.emit(r.newOutput(true))
			delete(p.running, key)
		}
		p.emit(prefixed(prefix, stepLines(l, palette(p.color), verbose, cwd)))
	case loop.Notice:
		text := l.Text
		if l.Warning {
			text = palette(p.color).paint(ansiYellow, "warning:") + " " + text
		}
		p.emit([]string{prefix + text})
	}
}

// stepLines are a finished step's lines.
func stepLines(l loop.Live, pal palette, verbose bool, cwd string) []string {
	// A Check that ran says its verdict where other steps say ok: "ok" before a FAIL would
	// read as success.
	status, summary := l.Status, l.Summary
	if l.Verdict != "" && status == loop.StatusOK {
		status, summary = l.Verdict, strings.TrimPrefix(summary, l.Verdict+": ")
	}
	column := fmt.Sprintf("%-5s", status)
	column = pal.status(status) + column[len(status):]
	lines := []string{fmt.Sprintf("%03d %-5s %s %s (%s)", l.Index, l.Role, column, summary, l.Duration.Round(time.Millisecond))}
	lines = append(lines, failureLines(l.Failure, 3, pal)...)
	for _, ev := range l.Notices {
		lines = append(lines, "    "+ev.Type+": "+clip(ev.Message, 400))
	}
	if verbose {
		lines = append(lines, stepLogs(l.LogDir, cwd))
	}
	return lines
}

func prefixed(prefix string, lines []string) []string {
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return lines
}

// emit writes whole lines, above the live line (which it clears and draws again).
func (p *progressWriter) emit(lines []string) {
	if len(lines) == 0 {
		return
	}
	if p.drawn {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.drawn = false
	}
	for _, l := range lines {
		fmt.Fprintln(p.out, l)
	}
	p.draw()
}

// draw puts the live line on the terminal: each running step with its elapsed time and what
// its agent does now, cut to the terminal's width.
func (p *progressWriter) draw() {
	if !p.tty || len(p.running) == 0 {
		return
	}
	now := p.clock()
	var parts []string
	for _, k := range p.runningKeys() {
		r := p.running[k]
		part := fmt.Sprintf("%s%03d %-5s %s", r.prefix, r.live.Index, r.live.Role, now.Sub(r.started).Round(time.Second))
		if a := agent.Activity(r.live.LogDir); a != "" {
			part += " · " + a
		}
		parts = append(parts, part)
	}
	fmt.Fprint(p.out, "\r\x1b[K"+clip(strings.Join(parts, "  |  "), terminalWidth(p.out)-1))
	p.drawn = true
}

// tick looks at the running steps: their new output (-v), a heartbeat that is due (no
// terminal), the live line redrawn (terminal).
func (p *progressWriter) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	var lines []string
	for _, k := range p.runningKeys() {
		r := p.running[k]
		lines = append(lines, r.newOutput(false)...)
		if !p.tty && now.Sub(r.beat) >= heartbeatEvery {
			r.beat = now
			line := fmt.Sprintf("%s%03d %-5s still running (%s)", r.prefix, r.live.Index, r.live.Role, now.Sub(r.started).Round(time.Second))
			if a := agent.Activity(r.live.LogDir); a != "" {
				line += ": " + a
			}
			lines = append(lines, line)
		}
	}
	if len(lines) > 0 {
		p.emit(lines)
	} else {
		p.draw()
	}
}

// startTicking starts the goroutine that ticks while steps run; it ends when none does.
func (p *progressWriter) startTicking() {
	if p.ticking || p.interval <= 0 {
		return
	}
	p.ticking = true
	go func() {
		for {
			time.Sleep(p.interval)
			p.mu.Lock()
			idle := len(p.running) == 0
			if idle {
				p.ticking = false
			}
			p.mu.Unlock()
			if idle {
				return
			}
			p.tick()
		}
	}()
}

func (p *progressWriter) runningKeys() []string {
	keys := make([]string, 0, len(p.running))
	for k := range p.running {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (p *progressWriter) clock() time.Time {
	if p.now == nil {
		return time.Now()
	}
	return p.now()
}

// newOutput is what the step's agent wrote since the last look, as "    | " lines (-v
// only); final takes a last line that has no newline yet.
func (r *runningStep) newOutput(final bool) []string {
	if !r.verbose {
		return nil
	}
	var lines []string
	for _, name := range []string{"stdout.txt", "stderr.txt"} {
		path := filepath.Join(r.live.LogDir, name)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(io.NewSectionReader(f, r.offsets[path], 1<<20))
		f.Close()
		if !final {
			data = data[:strings.LastIndexByte(string(data), '\n')+1]
		}
		r.offsets[path] += int64(len(data))
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if l != "" {
				lines = append(lines, r.prefix+"    | "+clip(l, 300))
			}
		}
	}
	return lines
}

// terminalWidth is out's width in columns (80 when it cannot be asked).
func terminalWidth(out io.Writer) int {
	if f, ok := fileOf(out); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 20 {
			return int(ws.Col)
		}
	}
	return 80
}
