package tracker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// DefaultBDTimeout bounds one bd call when BD.Timeout is zero. A call normally takes 0.1–0.5 s;
// a call that takes longer than this is stuck (a lock, a hung Dolt), not slow.
const DefaultBDTimeout = 30 * time.Second

// MaxBDArg is the largest argument bd can receive: Linux caps one argv string at 128 KiB
// including its terminating NUL, and bd takes notes only as an argument (--notes).
const MaxBDArg = 128*1024 - 1

// bdWaitDelay is how long a killed bd may keep its output pipes open before Wait gives up.
const bdWaitDelay = 5 * time.Second

// defaultCloseReason is recorded when SetStatus closes a task without a reason; bd's own
// default ("Closed") would not tell who closed it.
const defaultCloseReason = "Closed by git-norma"

// BD runs the bd CLI. Every call passes argv directly (never a shell), asks for --json and runs
// in Dir, so the backlog is always the repository's own .beads workspace.
type BD struct {
	// Bin is the bd executable; empty means "bd" on PATH.
	Bin string
	// Dir is the repository root, the working directory of every call. It is never a run
	// worktree: bd finds its workspace by walking up from here.
	Dir string
	// Timeout bounds each call; zero means DefaultBDTimeout.
	Timeout time.Duration
	// Env is appended to the cleaned process environment.
	Env []string
}

var _ Tracker = (*BD)(nil)

// NewBD returns a backend that runs bd from PATH in the repository root dir.
func NewBD(dir string) *BD {
	return &BD{Bin: "bd", Dir: dir, Timeout: DefaultBDTimeout}
}

// BDAvailable reports whether bd is on PATH and dir holds a bd workspace (.beads/metadata.json,
// which `bd init` writes), as opposed to only the issues.jsonl the embedded backend keeps.
func BDAvailable(dir string) bool {
	if _, err := exec.LookPath("bd"); err != nil {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, ".beads", "metadata.json"))
	return err == nil && st.Mode().IsRegular()
}

// CallError is a failed bd call: bd exited non-zero, or it exited 0 without the output the
// command promises (bd reports some per-id failures only on stderr).
type CallError struct {
	// Args is the argv after the executable name.
	Args []string
	// ExitCode is bd's exit status; 0 when bd claimed success but its output was unusable.
	ExitCode int
	// Stderr is everything bd wrote to stderr.
	Stderr string
	// Message is bd's JSON "error" text from stdout, or what was wrong with the output.
	Message string
}

func (e *CallError) Error() string {
	cmd := "bd"
	for _, a := range e.Args {
		cmd += " " + displayArg(a)
	}
	var parts []string
	if e.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit status %d", e.ExitCode))
	}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	if s := withoutWarnings(e.Stderr); s != "" && !strings.Contains(e.Message, s) {
		parts = append(parts, truncate(s, 2000))
	}
	if len(parts) == 0 {
		parts = append(parts, "failed")
	}
	return cmd + ": " + strings.Join(parts, ": ")
}

// withoutWarnings is bd's stderr without its advice (a "Warning:" line and the indented lines
// under it: a workspace's permissions, a deprecated metadata key, an unset beads.role), which
// bd prints before every error and which says nothing about it. Advice alone is kept.
func withoutWarnings(stderr string) string {
	var kept []string
	inWarning := false
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		inWarning = strings.HasPrefix(strings.ToLower(line), "warning:") || (inWarning && indented)
		if !inWarning {
			kept = append(kept, line)
		}
	}
	if len(kept) == 0 {
		return strings.TrimSpace(stderr)
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

// displayArg keeps error messages readable: long arguments (notes) are cut, and arguments with
// spaces or quotes are quoted.
func displayArg(a string) string {
	if len(a) > 80 {
		a = fmt.Sprintf("%s(%d bytes)", truncate(a, 60), len(a))
	}
	if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
		return fmt.Sprintf("%q", a)
	}
	return a
}

// truncate cuts s to at most n bytes, without splitting a UTF-8 sequence, and marks the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Create runs `bd create <title> -t <type> [-p <prio>] [--parent <id> --no-inherit-labels]
// [--description D] [--design D] [--acceptance A] [-l a,b] [--actor A] --json`.
func (b *BD) Create(ctx context.Context, t NewTask) (Task, error) {
	title := strings.TrimSpace(t.Title)
	if title == "" {
		return Task{}, errors.New("task title is empty")
	}
	if strings.HasPrefix(title, "-") {
		// bd takes the title only as a positional argument and would parse it as a flag.
		return Task{}, fmt.Errorf("task title %q starts with '-': bd would read it as an option; reword the title", title)
	}
	args := []string{"create", title, "-t", cmp.Or(t.Type, "task")}
	if t.Priority != PriorityUnset {
		if t.Priority < 0 || t.Priority > 4 {
			return Task{}, fmt.Errorf("invalid priority %d: use 0 (highest) to 4 (lowest)", t.Priority)
		}
		args = append(args, "-p", fmt.Sprint(t.Priority))
	}
	if t.Parent != "" {
		if err := checkID(t.Parent); err != nil {
			return Task{}, fmt.Errorf("parent: %w", err)
		}
		// Without --no-inherit-labels bd copies every parent label (norma-has-* state
		// included) onto the child.
		args = append(args, "--parent", t.Parent, "--no-inherit-labels")
	}
	for _, f := range []struct{ flag, val string }{
		{"--description", t.Description}, {"--design", t.Design}, {"--acceptance", t.Acceptance},
	} {
		if f.val != "" {
			args = append(args, f.flag, f.val)
		}
	}
	labels, err := bdLabels(t.Labels)
	if err != nil {
		return Task{}, err
	}
	if len(labels) > 0 {
		args = append(args, "-l", strings.Join(labels, ","))
	}
	if t.Actor != "" {
		args = append(args, "--actor", t.Actor)
	}
	args = append(args, "--json")
	res, err := b.call(ctx, args)
	if err != nil {
		if t.Parent != "" {
			return Task{}, taskError("parent task "+t.Parent, err)
		}
		return Task{}, err
	}
	task, err := res.object()
	if err != nil {
		return Task{}, err
	}
	task.Parent = cmp.Or(task.Parent, t.Parent) // create's output carries no parent field
	return task, nil
}

// Get runs `bd show <id> --json`.
func (b *BD) Get(ctx context.Context, id string) (Task, error) {
	if err := checkID(id); err != nil {
		return Task{}, err
	}
	return b.one(ctx, id, "show", id, "--json")
}

// List runs `bd list --all --limit 0 --json`: closed tasks included, no default limit.
func (b *BD) List(ctx context.Context) ([]Task, error) {
	return b.tasks(ctx, "list", "--all", "--limit", "0", "--json")
}

// Ready runs `bd ready --limit 0 --json`.
func (b *BD) Ready(ctx context.Context) ([]Task, error) {
	return b.tasks(ctx, "ready", "--limit", "0", "--json")
}

func (b *BD) tasks(ctx context.Context, args ...string) ([]Task, error) {
	res, err := b.call(ctx, args)
	if err != nil {
		return nil, err
	}
	return res.array()
}

// SetStatus closes with `bd close` (see close) and moves to any other status with `bd update
// <id> --status <s> --json`. bd validates the status, so custom statuses configured in bd work
// too.
func (b *BD) SetStatus(ctx context.Context, id, status, reason string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if status == "" {
		return fmt.Errorf("task %s: status is empty", id)
	}
	if status == StatusClosed {
		return b.close(ctx, id, reason)
	}
	_, err := b.one(ctx, id, "update", id, "--status", status, "--json")
	return err
}

// CloseForced runs `bd close <id> --reason R --force --json`: closed though open tasks block it.
func (b *BD) CloseForced(ctx context.Context, id, reason string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return b.close(ctx, id, reason, "--force")
}

// close runs `bd close <id> --reason <reason> [flags] --json`: bd records a close reason only
// through --reason.
func (b *BD) close(ctx context.Context, id, reason string, flags ...string) error {
	if strings.TrimSpace(reason) == "" {
		reason = defaultCloseReason
	}
	args := append([]string{"close", id, "--reason", reason}, flags...)
	_, err := b.one(ctx, id, append(args, "--json")...)
	return err
}

// Claim runs `bd update <id> --claim [--actor <actor>] --json`, bd's compare-and-swap claim.
func (b *BD) Claim(ctx context.Context, id, actor string) (Task, error) {
	return b.ClaimWithState(ctx, id, actor, nil)
}

// ClaimWithState is Claim with `--metadata` in the same `bd update`: bd 1.0.5 applies the
// metadata only once the claim went through (cmd/bd/update.go).
func (b *BD) ClaimWithState(ctx context.Context, id, actor string, state json.RawMessage) (Task, error) {
	if err := checkID(id); err != nil {
		return Task{}, err
	}
	args := []string{"update", id, "--claim"}
	if actor != "" {
		args = append(args, "--actor", actor)
	}
	if state != nil {
		meta, err := stateArg(id, state)
		if err != nil {
			return Task{}, err
		}
		args = append(args, "--metadata", meta)
	}
	args = append(args, "--json")
	// A claim that lost a race on the database (workers claiming at once; the other claim
	// may have been of another task) is tried again a few times, after a random pause so the
	// workers do not collide again. Still lost, it is ErrClaimed.
	for attempt := 1; ; attempt++ {
		t, err := b.one(ctx, id, args...)
		var ce *CallError
		if err == nil || attempt == claimAttempts || !errors.As(err, &ce) || !ce.raceLost() {
			return t, err
		}
		select {
		case <-ctx.Done():
			return Task{}, err
		case <-time.After(50*time.Millisecond + rand.N(200*time.Millisecond)):
		}
	}
}

// claimAttempts bounds the tries of a claim that keeps losing races.
const claimAttempts = 3

// stateArg is the --metadata argument that sets git-norma's state: bd 1.0.5 merges the object
// into the task's metadata key by key, so other keys (people's, other tools') stay.
func stateArg(id string, state json.RawMessage) (string, error) {
	meta, err := json.Marshal(map[string]json.RawMessage{StateKey: state})
	if err != nil {
		return "", fmt.Errorf("task %s: git-norma's state: %w", id, err)
	}
	if len(meta) > MaxBDArg {
		return "", fmt.Errorf("task %s: git-norma's state is %d bytes; bd takes metadata as one command-line argument, which Linux caps at 128 KiB", id, len(meta))
	}
	return string(meta), nil
}

// KeepsStateApart: bd keeps git-norma's state in the task's metadata (StateKeeper).
func (b *BD) KeepsStateApart() bool { return true }

// Update runs one `bd update <id> [--notes N] [--metadata M] [--add-label L]...
// [--remove-label L]... [--status S] --json`, so notes, labels and status change in a single bd call.
func (b *BD) Update(ctx context.Context, id string, u Update) error {
	if err := checkID(id); err != nil {
		return err
	}
	args := []string{"update", id}
	if u.Notes != nil {
		if n := len(*u.Notes); n > MaxBDArg {
			return fmt.Errorf("task %s: notes are %d bytes; bd takes notes only as one command-line argument, which Linux caps at 128 KiB", id, n)
		}
		args = append(args, "--notes", *u.Notes)
	}
	if u.State != nil {
		meta, err := stateArg(id, u.State)
		if err != nil {
			return err
		}
		args = append(args, "--metadata", meta)
	}
	if _, err := bdLabels(slices.Concat(u.AddLabels, u.RemoveLabels)); err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	add, remove := normalizeLabels(u.AddLabels), normalizeLabels(u.RemoveLabels)
	for _, l := range add {
		if slices.Contains(remove, l) {
			return fmt.Errorf("task %s: label %q is both added and removed", id, l)
		}
		args = append(args, "--add-label", l)
	}
	for _, l := range remove {
		args = append(args, "--remove-label", l)
	}
	for _, f := range []struct {
		flag string
		val  *string
	}{{"--title", u.Title}, {"--description", u.Description}, {"--acceptance", u.Acceptance}} {
		if f.val != nil {
			args = append(args, f.flag, *f.val)
		}
	}
	if u.Priority != nil {
		args = append(args, "-p", fmt.Sprint(*u.Priority))
	}
	if u.Status != "" {
		args = append(args, "--status", u.Status)
	}
	if u.Status == StatusOpen {
		// A task handed back is nobody's: bd keeps the claim's assignee otherwise.
		args = append(args, "--assignee", "")
	}
	if len(args) == 2 {
		return nil // nothing to change; bd would print "No updates specified" as text
	}
	_, err := b.one(ctx, id, append(args, "--json")...)
	return err
}

// checkID refuses ids bd would misread: an empty id makes update and close act on the "last
// touched" issue, and a leading '-' would be parsed as a flag.
func checkID(ids ...string) error {
	for _, id := range ids {
		if id == "" {
			return errors.New("task id is empty (refusing to run bd, which would act on the last touched issue)")
		}
		if strings.HasPrefix(id, "-") || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Errorf("invalid task id %q", id)
		}
	}
	return nil
}

// bdLabels is normalizeLabels refusing the characters bd's comma-separated label flags (-l,
// --add-label, --remove-label) would split or mangle.
func bdLabels(in []string) ([]string, error) {
	for _, l := range in {
		if l = strings.TrimSpace(l); strings.ContainsAny(l, ",\"\r\n") {
			return nil, fmt.Errorf("label %q cannot be passed to bd: labels may not contain commas, quotes or line breaks", l)
		}
	}
	return normalizeLabels(in), nil
}

// one runs a command about one issue (show, update, close) and returns the issue it printed.
// bd reporting success with nothing printed, or with `[]`, means the id was not acted on (bd
// prints per-id failures only on stderr).
func (b *BD) one(ctx context.Context, id string, args ...string) (Task, error) {
	res, err := b.call(ctx, args)
	var tasks []Task
	if err == nil {
		tasks, err = res.array()
	}
	if err == nil && len(tasks) == 0 {
		err = res.errorf(fmt.Sprintf("bd printed no issue for %s", id))
	}
	if err != nil {
		return Task{}, taskError("task "+id, err)
	}
	return tasks[0], nil
}

// taskError adds ErrNotFound or ErrClaimed to a bd failure that says so, keeping the
// *CallError reachable with errors.As.
func taskError(what string, err error) error {
	var ce *CallError
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.notFound():
		return fmt.Errorf("%s: %w: %w", what, ErrNotFound, err)
	case ce.claimRefused():
		return fmt.Errorf("%s: %w: %w", what, ErrClaimed, err)
	}
	return err
}

// bdResult is what a successful (exit 0) call printed.
type bdResult struct {
	args   []string
	stdout []byte
	stderr string
}

// call runs bd once. Exit status 0 returns the output; anything else is an error: a *CallError
// when bd ran and failed, a plain error when it could not run or timed out.
func (b *BD) call(ctx context.Context, args []string) (*bdResult, error) {
	for _, a := range args {
		if len(a) > MaxBDArg {
			return nil, fmt.Errorf("bd %s: an argument is %d bytes; Linux caps one argument at 128 KiB", args[0], len(a))
		}
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("bd %s: an argument contains a NUL byte, which cannot be passed to a program", args[0])
		}
	}
	bin := cmp.Or(b.Bin, "bd")
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = DefaultBDTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = b.Dir
	cmd.Env = b.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// bd runs in its own process group so a timeout kills it with everything it started
	// (hooks, a Dolt helper) and nothing is left holding the output pipes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return os.ErrProcessDone
	}
	cmd.WaitDelay = bdWaitDelay

	err := cmd.Run()
	if err == nil {
		return &bdResult{args: args, stdout: stdout.Bytes(), stderr: stderr.String()}, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("bd %s: %w", args[0], ctx.Err())
	case cctx.Err() != nil:
		return nil, fmt.Errorf("bd %s timed out after %s: %w", args[0], timeout, context.DeadlineExceeded)
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		// A missing Dir fails the same way (with Setpgid Go reports it as fork/exec ENOENT).
		if _, derr := os.Stat(cmp.Or(b.Dir, ".")); derr != nil {
			return nil, fmt.Errorf("bd %s: repository directory: %w", args[0], derr)
		}
		return nil, fmt.Errorf("bd is not installed or not on PATH (looked for %q): %w", bin, err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return nil, fmt.Errorf("run bd %s: %w", args[0], err)
	}
	return nil, &CallError{
		Args: slices.Clone(args), ExitCode: ee.ExitCode(), Stderr: stderr.String(),
		Message: jsonErrorMessage(stdout.Bytes()),
	}
}

// environ is the caller's environment without git's repository-pinning variables (a hook's
// GIT_DIR must not leak into bd's own git calls), with PWD matching Dir, plus Env.
// BD_JSON_ENVELOPE is dropped so output keeps the shape the parsers expect.
func (b *BD) environ() []string {
	env := slices.DeleteFunc(git.StripRepoVars(os.Environ()), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "BD_JSON_ENVELOPE" || (name == "PWD" && b.Dir != "")
	})
	if b.Dir != "" {
		if abs, err := filepath.Abs(b.Dir); err == nil {
			env = append(env, "PWD="+abs)
		}
	}
	return append(env, b.Env...)
}
