package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

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

// Children runs `bd list --parent <id> --all --limit 0 --json`: the task's direct children,
// closed ones included.
func (b *BD) Children(ctx context.Context, id string) ([]Task, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	return b.tasks(ctx, "list", "--parent", id, "--all", "--limit", "0", "--json")
}

func (b *BD) tasks(ctx context.Context, args ...string) ([]Task, error) {
	res, err := b.call(ctx, args)
	if err != nil {
		return nil, err
	}
	tasks, err := res.array()
	for i := range tasks {
		// list's and ready's dependent_count leave children out (bd 1.0.5 recorded an epic
		// with a child as 0 there, 1 in show): only show's says there are none.
		tasks[i].NoChildren = false
	}
	return tasks, err
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
