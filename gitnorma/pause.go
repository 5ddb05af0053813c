package gitnorma

import (
	"errors"
	"os"
	"strings"
)

// pauseFile is the peer loops' pause switch: while it exists, runs stop cleanly between steps
// and `loop` starts no new task.
const pauseFile = "PAUSE"

// PauseReason returns why git-norma is paused ("" when it is not). The file's first line is
// the reason; an empty file still pauses.
func (r *Repo) PauseReason() string {
	data, err := os.ReadFile(r.Path(pauseFile))
	if err != nil {
		return ""
	}
	reason, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	if reason == "" {
		reason = "paused (" + r.Path(pauseFile) + " exists)"
	}
	return reason
}

// Pause creates .norma/PAUSE with a reason.
func (r *Repo) Pause(reason string) error {
	if strings.TrimSpace(reason) == "" {
		reason = "paused by git norma pause"
	}
	return os.WriteFile(r.Path(pauseFile), []byte(reason+"\n"), 0o644)
}

// Resume removes .norma/PAUSE; it reports whether there was one.
func (r *Repo) Resume() (bool, error) {
	err := os.Remove(r.Path(pauseFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// resumeHint follows a pause's reason wherever a run or loop stops for it.
const resumeHint = " (lift it with: git norma resume)"
