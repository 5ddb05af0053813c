package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// LogsOptions say which step's logs `git norma logs` prints.
type LogsOptions struct {
	// Target is a run id (r-...) or a task id (its newest run).
	Target string
	// Step is the step's index; 0: the newest step (with Follow: each step as it comes).
	Step int
	// Follow keeps printing what is written until the step (or, without Step, the run) ends.
	Follow bool
	// Poll is how often a followed log is looked at.
	Poll time.Duration
}

// Logs prints a step's stdout.txt and stderr.txt to w, each under a "==> path <==" header as
// tail(1) does; following, it prints what is appended, step after step, until the run's
// process is gone.
func (h *History) Logs(ctx context.Context, o LogsOptions, w io.Writer) error {
	runID, err := h.logsRun(ctx, o.Target)
	if err != nil {
		return err
	}
	runDir := h.repo.Path("runs", runID)
	steps := filepath.Join(runDir, "steps")
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	f := &logFollower{w: w, offsets: map[string]int64{}, root: h.repo.Root}
	first := "" // the first step shown; following, every later one is shown too, in order
	for {
		// Asked before reading: what the run wrote before it ended is shown.
		live := slices.ContainsFunc(h.repo.LiveRuns(), func(l LockHolder) bool { return l.RunID == runID })
		dirs := stepDirs(steps)
		dir := ""
		switch {
		case o.Step > 0:
			dir = findStep(dirs, o.Step)
			if dir == "" {
				return failf("list the run's steps with: git norma status "+runID, "run %s has no step %d", runID, o.Step)
			}
		case len(dirs) > 0:
			dir = dirs[len(dirs)-1]
		}
		if first == "" {
			first = dir
		}
		for _, d := range dirs {
			if d < first || d > dir {
				continue
			}
			if err := f.show(filepath.Join(steps, d)); err != nil {
				return err
			}
		}
		_, statErr := os.Stat(filepath.Join(steps, dir, "output.json"))
		ended := dir != "" && statErr == nil
		// Following ends with the step asked for, or with the run's process.
		if !o.Follow || (o.Step > 0 && ended) || !live {
			if dir == "" {
				return failf("", "run %s has no step yet", runID)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Poll):
		}
	}
}

// logsRun is the run a target names: itself, or the task's newest run.
func (h *History) logsRun(ctx context.Context, target string) (string, error) {
	if strings.HasPrefix(target, "r-") {
		if _, err := os.Stat(h.repo.Path("runs", target)); err != nil {
			return "", failf("list runs with: git norma status", "no run %s here", target)
		}
		return target, nil
	}
	if err := h.validID(target); err != nil {
		return "", err
	}
	st, err := h.repo.OpenStore(ctx)
	if err != nil {
		return "", err
	}
	defer st.Close()
	runs, err := st.RunsForTask(ctx, target, 1)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if len(runs) == 0 {
		// A mistyped id must not look like a task that never ran (as in TaskRuns).
		t, err := h.backlog.Show(ctx, target)
		if err != nil {
			return "", err
		}
		what, hint := noRun(t)
		return "", failf(hint, "%s", what)
	}
	return runs[0].ID, nil
}

// stepDirs are the run's step directories (NNN-role), in order.
func stepDirs(steps string) []string {
	entries, _ := os.ReadDir(steps)
	var dirs []string
	for _, e := range entries {
		if _, _, ok := stepOf(e.Name()); ok && e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	slices.Sort(dirs)
	return dirs
}

func findStep(dirs []string, index int) string {
	for _, d := range dirs {
		if i, _, _ := stepOf(d); i == index {
			return d
		}
	}
	return ""
}

// stepOf reads a step directory's name: "006-do" is step 6, role do.
func stepOf(name string) (int, string, bool) {
	num, role, ok := strings.Cut(name, "-")
	i, err := strconv.Atoi(num)
	return i, role, ok && err == nil && len(num) == 3
}

// logFollower prints logs from where it left them.
type logFollower struct {
	w       io.Writer
	root    string
	offsets map[string]int64
	current string
}

func (f *logFollower) show(stepDir string) error {
	for _, name := range []string{"stdout.txt", "stderr.txt"} {
		path := filepath.Join(stepDir, "logs", name)
		file, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.NewSectionReader(file, f.offsets[path], 1<<62))
		file.Close()
		if _, seen := f.offsets[path]; err != nil || len(data) == 0 && seen {
			continue
		}
		if f.current != path {
			rel, _ := filepath.Rel(f.root, path)
			if _, err := fmt.Fprintf(f.w, "==> %s <==\n", rel); err != nil {
				return err
			}
			f.current = path
		}
		f.offsets[path] += int64(len(data))
		if _, err := f.w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
