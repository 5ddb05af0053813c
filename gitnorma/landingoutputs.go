package gitnorma

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/git-norma/git-norma/loop"
)

// landingOutputs are the step files a landing reads — the last Plan output and the last Check
// output, for the squash commit's message. The loop writes every step's files without syncing
// them (the store commit is the step's commit point); these two are made durable, with their
// directory entries, once, before the run's end is committed. So a power cut after a run has
// ended never leaves a landing without them, and no step waits for a disk write on the way.
type landingOutputs struct {
	plan, check string
}

// note remembers a recorded step's output.json if it holds what a landing looks for.
func (o *landingOutputs) note(rec loop.StepRecord) {
	path := filepath.Join(rec.Dir, "output.json")
	if rec.Output.Plan != nil {
		o.plan = path
	}
	if rec.Output.Check != nil {
		o.check = path
	}
}

// sync makes the remembered files durable, and their directory entries as far as the
// steps directory (some file systems refuse to sync a directory: harmless). It goes on past a
// failure, so one file that cannot be synced does not leave the other unsynced.
func (o *landingOutputs) sync() error {
	var errs []error
	for _, p := range []string{o.plan, o.check} {
		if p == "" {
			continue
		}
		errs = append(errs, fsync(p))
		stepDir := filepath.Dir(p)
		_ = fsync(stepDir)
		_ = fsync(filepath.Dir(stepDir))
	}
	return errors.Join(errs...)
}

func fsync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
