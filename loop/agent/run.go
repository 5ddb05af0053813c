package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-norma/git-norma/loop"
)

// Files a CLI run leaves in the step directory, next to input.json and output.json.
const (
	cliPromptSchemaFile = "output-schema.json"
	cliLastMessageFile  = "last-message.txt"
	// stderrTailBytes is how much of a run's stderr is kept to explain a failure.
	stderrTailBytes = 64 << 10
)

// attempt is one run of the CLI: prompt file as stdin, envelope, answer, validation. It
// returns the rejected answer text too, for the repair prompt.
func (a *cliAgent) attempt(ctx context.Context, req loop.Request, name, prompt string, deadline time.Time, usage *loop.Usage) (loop.Output, string, error) {
	promptPath := filepath.Join(req.StepDir, name)
	if err := loop.WriteNew(promptPath, []byte(prompt)); err != nil { // the agent may have left a link there
		return loop.Output{}, "", err
	}
	inv, err := a.invocation(req)
	if err != nil {
		return loop.Output{}, "", err
	}
	var timeout time.Duration
	if !deadline.IsZero() {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	env, err := a.exec(ctx, req, inv, promptPath, timeout)
	if err != nil {
		return loop.Output{}, "", err
	}
	ans, err := a.b.parse(env)
	addUsage(usage, ans.usage)
	if err != nil {
		return loop.Output{}, ans.text, err
	}
	out, err := a.decode(ans, req.Input.Task.ID)
	return out, ans.text, err
}

// invocation writes the schema file and removes a stale last-message file (codex leaves the
// old one in place when a run fails).
func (a *cliAgent) invocation(req loop.Request) (cliInvocation, error) {
	inv := cliInvocation{
		model: a.o.Model, workDir: req.WorkDir, extra: a.extra, replaced: a.replaced,
		schemaFile:  filepath.Join(req.StepDir, cliPromptSchemaFile),
		lastMessage: filepath.Join(req.StepDir, cliLastMessageFile),
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, a.schema); err != nil {
		return inv, err
	}
	inv.schema = compact.String()
	if err := loop.WriteNew(inv.schemaFile, a.schema); err != nil {
		return inv, err
	}
	if err := os.Remove(inv.lastMessage); err != nil && !errors.Is(err, os.ErrNotExist) {
		return inv, err
	}
	return inv, nil
}

// exec runs the CLI once in its own process group, streaming to the step's logs.
func (a *cliAgent) exec(ctx context.Context, req loop.Request, inv cliInvocation, promptPath string, timeout time.Duration) (cliEnvelope, error) {
	stdin, err := os.Open(promptPath)
	if err != nil {
		return cliEnvelope{}, err
	}
	defer stdin.Close()
	cmd := exec.Command(a.o.Path, a.b.argv(a.role, inv)...)
	cmd.Dir = req.WorkDir
	// A file, not a pipe: the CLI reads the prompt, then EOF (codex and opencode wait
	// forever on an open, silent stdin).
	cmd.Stdin = stdin
	cmd.Stdout = req.Stdout
	cmd.Env = a.environ(req)
	stderrTail := captureStderr(cmd, req.Stderr)
	offset, err := loop.LogSize(req.StdoutPath)
	if err != nil {
		return cliEnvelope{}, err
	}
	res, err := loop.RunProcess(ctx, cmd, timeout)
	switch {
	case err != nil && ctx.Err() != nil:
		return cliEnvelope{}, err
	case err != nil:
		return cliEnvelope{}, cliErrorf(loop.ErrKindStart, a.o.Kind, "cannot start %q: %s", a.o.Path, a.startHint(err))
	case res.TimedOut:
		return cliEnvelope{}, cliErrorf(loop.ErrKindTimeout, a.o.Kind, "did not finish within %s; its process group was killed", timeout.Round(time.Millisecond))
	}
	return cliEnvelope{cli: a.o.Kind, stdoutPath: req.StdoutPath, offset: offset, stderr: stderrTail(),
		exitCode: res.ExitCode, lastMessage: inv.lastMessage}, nil
}

func (a *cliAgent) startHint(err error) string {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return "command not found; install it (" + a.b.install + ") or set the agent's path"
	}
	return loop.StartHint(err)
}

// decode turns the answer into a validated output.
func (a *cliAgent) decode(ans cliAnswer, taskID string) (loop.Output, error) {
	data := ans.structured
	if data == nil {
		var err error
		if data, err = extractJSON(a.o.Kind, ans.text); err != nil {
			return loop.Output{}, err
		}
	}
	var out loop.Output
	if err := json.Unmarshal(data, &out); err != nil {
		return loop.Output{}, cliErrorf(loop.ErrKindInvalidJSON, a.o.Kind, "the answer does not fit the output format: %v (starts with %q)", err, loop.Snippet(data))
	}
	out.Usage = nil
	var pe *loop.ProtocolError
	if err := loop.ValidateOutput(a.role, taskID, &out); errors.As(err, &pe) {
		return loop.Output{}, cliErrorf(pe.Kind, a.o.Kind, "the answer breaks the %s contract: %s", a.role, pe.Msg)
	}
	out.Summary.Warnings = append(out.Summary.Warnings, ans.warnings...)
	return out, nil
}

// topModel is the model of an envelope's per-model usage that wrote the most output tokens
// (the first by name on a tie).
func topModel[M any](models map[string]M, outputTokens func(M) int64) string {
	top := ""
	for _, m := range slices.Sorted(maps.Keys(models)) {
		if top == "" || outputTokens(models[m]) > outputTokens(models[top]) {
			top = m
		}
	}
	return top
}

func addUsage(u *loop.Usage, v loop.Usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CostUSD += v.CostUSD
	if u.Model == "" {
		u.Model = v.Model
	}
}

// extractJSON finds the one JSON object of a final message: the whole text, a fenced block,
// or the span from the first "{" to the last "}".
func extractJSON(cli, text string) ([]byte, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, cliErrorf(ErrKindNoAnswer, cli, "the final message is empty; expected one JSON object")
	}
	candidates := append([]string{t}, fencedBlocks(t)...)
	if i, j := strings.Index(t, "{"), strings.LastIndex(t, "}"); i >= 0 && j > i {
		candidates = append(candidates, t[i:j+1])
	}
	for _, c := range candidates {
		if c = strings.TrimSpace(c); strings.HasPrefix(c, "{") && json.Valid([]byte(c)) {
			return []byte(c), nil
		}
	}
	return nil, cliErrorf(loop.ErrKindInvalidJSON, cli, "the final message is not one JSON object (starts with %q)", loop.Snippet([]byte(t)))
}

// fencedBlocks returns the contents of the Markdown code fences in text.
func fencedBlocks(text string) []string {
	var out []string
	parts := strings.Split(text, "```")
	for i := 1; i < len(parts); i += 2 {
		body := parts[i]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.HasPrefix(strings.TrimSpace(body), "{") {
			body = body[nl+1:] // drop the info string ("json")
		}
		out = append(out, body)
	}
	return out
}

// cliEnvelope is where one run's output is: stdout in the step log from offset, the tail of
// stderr, the exit code and (codex) the last-message file.
type cliEnvelope struct {
	cli         string
	stdoutPath  string
	offset      int64
	stderr      []byte
	exitCode    int
	lastMessage string
}

// jsonEvents calls fn with every stdout line of this run that decodes as a JSON object T.
// Lines longer than MaxOutputBytes are skipped (and reported), never held in memory.
func jsonEvents[T any](e cliEnvelope, fn func(ev T)) (skipped bool, err error) {
	f, err := loop.OpenRegular(e.stdoutPath)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(e.offset, io.SeekStart); err != nil {
		return false, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > loop.MaxOutputBytes {
			over, line = true, line[:0]
		} else if !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if t := bytes.TrimSpace(line); over {
			skipped = true
		} else if len(t) > 0 && t[0] == '{' {
			var ev T
			if json.Unmarshal(t, &ev) == nil {
				fn(ev)
			}
		}
		line, over = line[:0], false
		if err == io.EOF {
			return skipped, nil
		}
		if err != nil {
			return skipped, err
		}
	}
}

// tooLong is the error of a run whose answer may have been on a skipped, too long line.
func (e cliEnvelope) tooLong() error {
	return cliErrorf(loop.ErrKindTooLarge, e.cli, "a stdout line is longer than %d MiB; the answer must be one JSON object", loop.MaxOutputBytes>>20)
}

// exitError is the failure of a run that exited non-zero without an envelope explaining it.
func (e cliEnvelope) exitError() error {
	if line := lastLine(e.stderr); line != "" {
		return cliErrorf(loop.ErrKindExit, e.cli, "exited with status %d: %s (see logs/stderr.txt)", e.exitCode, line)
	}
	return cliErrorf(loop.ErrKindExit, e.cli, "exited with status %d (see logs/stderr.txt)", e.exitCode)
}

var ansiRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`) })

// lastLine is the last meaningful line of out (not a stack frame), without terminal
// colours, shortened.
func lastLine(out []byte) string {
	lines := strings.Split(ansiRE().ReplaceAllString(string(out), ""), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "at ") {
			return loop.OneLine(l, 200)
		}
	}
	return ""
}

// captureStderr sends cmd's stderr to w, the step's stderr log, and returns what reads this
// run's part of it once the run is over (nil when w is no regular file).
func captureStderr(cmd *exec.Cmd, w io.Writer) (tail func() []byte) {
	cmd.Stderr = w
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return func() []byte {
				tail, _ := fileTail(f.Name(), st.Size(), stderrTailBytes)
				return tail
			}
		}
	}
	// A pipe: do not wait on a stray child that still holds it once the CLI exited.
	cmd.WaitDelay = time.Second
	return func() []byte { return nil }
}

// fileTail is what the file at path holds from offset on, at most its last n bytes, and
// where that starts.
func fileTail(path string, offset, n int64) (tail []byte, from int64) {
	f, err := loop.OpenRegular(path)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0
	}
	// The CLI may have truncated the file (ftruncate on its stderr): nothing is past its size.
	from = min(max(offset, st.Size()-n), st.Size())
	buf := make([]byte, st.Size()-from)
	read, _ := f.ReadAt(buf, from)
	return buf[:read], from
}

// httpStatusRE finds an HTTP status in an error message: "unexpected status 401",
// "\"code\":401", "HTTP 503".
var httpStatusRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:status|code|http)\W{0,3}([1-5][0-9][0-9])\b`) })

// httpStatusOf is the HTTP status msg mentions, or 0.
func httpStatusOf(msg string) int {
	m := httpStatusRE().FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
