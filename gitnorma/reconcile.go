package gitnorma

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/notes"
)

// StopCrashed is the stop reason of a run whose process died without finishing it.
const StopCrashed = "crashed"

var stepDirRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d{3})-(plan|do|check|act)$`) })

// reconcile repairs what dead runs left (spec 4.2). A run marked running whose task lock
// nobody holds (this process holds its own task's) is dead: its step directories without rows
// get a fail row, it becomes stopped, and a task it claimed is reopened. Only runs marked
// running are visited, so start-up cost does not grow with history.
func (r *run) reconcile(ctx context.Context) error {
	runs, err := r.st.RunsWithStatus(ctx, store.StatusRunning)
	if err != nil {
		return err
	}
	for _, dead := range runs {
		release, alive := r.holdIfDead(dead)
		if alive {
			continue
		}
		err := r.reconcileOne(ctx, dead)
		r.reconciledOwn = r.reconciledOwn || dead.TaskID == r.pre.task.ID
		release()
		if err != nil {
			return err
		}
	}
	return nil
}

// holdIfDead takes the task lock of another task's run to tell whether its process lives (a
// run of our own task is dead); the returned function releases what it took.
func (r *run) holdIfDead(run store.Run) (func(), bool) {
	if run.TaskID == r.pre.task.ID {
		return func() {}, false
	}
	l, err := r.app.Repo.acquireTaskLock(run.TaskID)
	if err != nil {
		return nil, true
	}
	return l.Release, false
}

func (r *run) reconcileOne(ctx context.Context, dead store.Run) error {
	r.recordUnguarded(ctx, dead)
	if err := r.reconcileSteps(ctx, dead); err != nil {
		return err
	}
	r.catchUpNotes(ctx, dead)
	r.reopenIfClaimed(ctx, dead)
	now := r.app.Now()
	return r.st.FinishRun(ctx, dead.ID, store.StatusStopped, "", StopCrashed, now, store.Event{
		TS: now, Type: "run_reconciled", Message: "the run's process died; marked stopped during recovery"})
}

func (r *run) reconcileSteps(ctx context.Context, dead store.Run) error {
	stepsDir := filepath.Join(r.app.Repo.Root, filepath.FromSlash(dead.RunDir), "steps")
	entries, err := os.ReadDir(stepsDir)
	if err != nil {
		return nil // no steps were started
	}
	for _, e := range entries {
		m := stepDirRE().FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		index, _ := strconv.Atoi(m[1])
		r.removeHalfWritten(ctx, dead.ID, filepath.Join(stepsDir, e.Name()))
		rel := filepath.ToSlash(filepath.Join(dead.RunDir, "steps", e.Name()))
		if err := r.st.ReconcileStep(ctx, dead.ID, index, m[2], rel, r.app.Now()); err != nil {
			return err
		}
	}
	return nil
}

// removeHalfWritten deletes and records the temp files of atomic writes the crash cut short
// (the real file was never replaced).
func (r *run) removeHalfWritten(ctx context.Context, runID, dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, t := range tmps {
		if os.Remove(t) == nil {
			_ = r.st.AppendEvent(ctx, runID, store.Event{TS: r.app.Now(), Type: "half_written_removed",
				Message: "removed " + filepath.Base(t) + ", a write the crash interrupted, in " + filepath.Base(dir)})
		}
	}
}

// catchUpNotes rewrites the git notes of a dead run's committed steps, which the process may
// have died before writing. Adding is idempotent.
func (r *run) catchUpNotes(ctx context.Context, dead store.Run) {
	steps, err := r.st.Steps(ctx, dead.ID)
	if err != nil {
		return
	}
	events, err := r.st.Events(ctx, dead.ID)
	if err != nil {
		return
	}
	heads := map[string]string{}
	for _, e := range events {
		var d struct {
			Head string `json:"head"`
		}
		if e.Type == "step_committed" && json.Unmarshal([]byte(e.DataJSON), &d) == nil && d.Head != "" {
			heads[strings.SplitN(e.Message, " ", 2)[0]] = d.Head
		}
	}
	journal := r.app.Repo.NotesJournal()
	for _, s := range steps {
		if head := heads[filepath.Base(s.Dir)]; head != "" {
			_ = journal.Add(ctx, head, stepEntry(dead.TaskID, s, r.app.redact))
		}
	}
}

// crashedJournal returns the journal lines of the steps the task's recent dead runs committed,
// which the task state may lack (taskMirror.catchUp). Only the last few runs are looked at:
// each run catches up the ones before it.
func (r *run) crashedJournal(ctx context.Context) []taskstate.JournalLine {
	runs, err := r.st.RunsForTask(ctx, r.pre.task.ID, 5)
	if err != nil {
		return nil
	}
	var lines []taskstate.JournalLine
	for _, dead := range runs {
		if dead.StopReason != StopCrashed {
			continue
		}
		steps, err := r.st.Steps(ctx, dead.ID)
		if err != nil {
			return nil
		}
		for _, s := range steps {
			if s.Status == "skipped" {
				continue // the mirror never journals a step restored from the state
			}
			at, summary := s.EndedAt, s.Summary
			if at.IsZero() {
				at, summary = s.StartedAt, "interrupted: the run's process died during this step"
			}
			lines = append(lines, taskstate.JournalLine{TS: notes.Stamp(at), Run: s.RunID, Step: s.Index,
				Role: s.Role, Status: s.Status, Summary: summary})
		}
	}
	return lines
}

// recoverClaim reopens a task left in progress by one of our runs that died, after its row was
// finished (landing, say), before giving its claim back: we hold the task lock, so the claim
// is stale. Claims of others are never touched (see claimedBy).
func (r *run) recoverClaim(ctx context.Context) bool {
	runs, err := r.st.RunsForTask(ctx, r.pre.task.ID, 0) // however many checks of the task came since
	if err != nil {
		return false
	}
	t, err := r.tr.Get(ctx, r.pre.task.ID)
	if err != nil {
		return false
	}
	for _, dead := range runs {
		if r.app.claimedBy(ctx, dead, t) {
			if !r.reopenClaimed(ctx, dead) {
				return false
			}
			_ = r.st.SetClaim(ctx, dead.ID, store.ClaimReleased)
			return true
		}
	}
	return false
}

// reopenIfClaimed puts a task back to open only if the dead run holds its claim (see
// claimedBy): a task someone else moved or claimed since is left alone. Either way the run
// holds no claim any more.
func (r *run) reopenIfClaimed(ctx context.Context, dead store.Run) {
	t, err := r.tr.Get(ctx, dead.TaskID)
	if err != nil {
		return // the tracker could not say: the claim stays recorded for the next recovery
	}
	if r.app.claimedBy(ctx, dead, t) && !r.reopenClaimed(ctx, dead) {
		return
	}
	_ = r.st.SetClaim(ctx, dead.ID, store.ClaimReleased)
}

// reopenClaimed reopens the task the dead run still claims, and records that.
func (r *run) reopenClaimed(ctx context.Context, dead store.Run) bool {
	if r.tr.SetStatus(ctx, dead.TaskID, tracker.StatusOpen, "") != nil {
		return false
	}
	_ = r.st.AppendEvent(ctx, dead.ID, store.Event{TS: r.app.Now(), Type: "claim_recovered",
		Message: "the task was still claimed by this run after its process died; reopened"})
	return true
}
