package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// appendProgress adds the step's entry to artifacts/progress.md in the spec 8.5 template.
func appendProgress(runDir, taskID, runID string, rec StepRecord) error {
	dir := filepath.Join(runDir, "artifacts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "progress.md"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(ProgressEntry(taskID, runID, rec))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ProgressEntry renders one journal entry (spec 8.5).
func ProgressEntry(taskID, runID string, rec StepRecord) string {
	out := rec.Output
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — %03d %s — %s/%s\n", rec.EndedAt.UTC().Format(time.RFC3339), rec.Index,
		strings.ToUpper(string(rec.Role)), out.Status, out.StopReason)
	if rec.Iteration > 0 {
		fmt.Fprintf(&b, "**Task:** %s  \n**Run:** %s · **Iteration:** %d\n\n", taskID, runID, rec.Iteration)
	} else { // a journal note written before notes kept the iteration
		fmt.Fprintf(&b, "**Task:** %s  \n**Run:** %s\n\n", taskID, runID)
	}
	title := out.Progress.Title
	if title == "" {
		title = out.Summary.Text
	}
	fmt.Fprintf(&b, "**Title:** %s\n\n**Details:**\n", OneLine(title, 200))
	details := out.Progress.Details
	if len(details) == 0 {
		details = []string{out.Summary.Text}
	}
	for _, d := range append(details, out.Summary.Warnings...) {
		fmt.Fprintf(&b, "- %s\n", OneLine(d, 400))
	}
	fmt.Fprintf(&b, "\n**Logs:**\n- stdout: %s\n- stderr: %s\n\n", out.Logs.StdoutPath, out.Logs.StderrPath)
	return b.String()
}

// writeJSON writes a step's input.json or output.json, indented, in place: the step counts
// only once the store commits it, so no temp file and rename (docs/performance.md). Whatever
// is at path goes first and the file must be new: a link an agent left in its step directory
// is replaced, never written through. Not synced: the recorder in gitnorma makes what landing
// reads durable before the run's end is committed.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteNew(path, append(data, '\n'))
}

// CreateNew makes path a new file, open for appending: whatever is there goes first, so a link
// a confined process left in a place it may write (a step directory) is replaced, never
// written through.
func CreateNew(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
}

// WriteNew writes data to path as a new file (CreateNew).
func WriteNew(path string, data []byte) error {
	f, err := CreateNew(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// writeFileAtomic replaces path whole, so no reader ever sees half a file. The temp file is
// removed only when something failed: after the rename there is nothing left to remove.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
