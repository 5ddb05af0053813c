package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// The run store as the guard watches it: the records of the run's task, the violations
// pending, and the store's own file.

// fileIdentity names the file at path by device and inode: a replaced file is another one.
func fileIdentity(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", sys.Dev, sys.Ino)
	}
	return "present"
}

// distrustReplaced marks the file now at the store's path as one unconfined processes ran
// beside (trust.go): the run's violation goes to the file it opened, which is gone, and the
// new one must not be taken as evidence either. It says what became of it.
func (g *Guard) distrustReplaced(ctx context.Context, s *Snapshot) string {
	mark := store.Unshielded{At: g.Now(), What: "the store was replaced while an unconfined agent of run " + g.RunID + " ran"}
	if s.unshielded != nil {
		mark = *s.unshielded
	}
	st, err := store.Open(ctx, g.normaPath("norma.db"))
	if err == nil {
		defer st.Close()
		err = st.Facts().RestoreUnshielded(ctx, mark)
	}
	return outcome(err, "marked as written by unconfined processes; move it away and run git norma doctor", "could not mark it: ")
}

// checkStore reports records of this run or its task that the run did not write, and removes
// the runs an agent forged (a task's run can only be started by the process holding its lock:
// this one).
func (g *Guard) checkStore(ctx context.Context, s *Snapshot) []string {
	if g.Store == nil {
		return nil
	}
	db := g.rel(g.normaPath("norma.db"))
	if id := fileIdentity(g.normaPath("norma.db")); id != s.dbFile {
		return []string{db + " (replaced by another file; " + g.distrustReplaced(ctx, s) + ")"}
	}
	var found []string
	// Its schema first: a trigger would write records whenever git-norma writes its own (after
	// this look), a dropped table would take the record below with it.
	if schema, err := g.Store.Facts().Schema(ctx); err != nil || schema != s.schema {
		fate := "not restored: look at it with sqlite3"
		if dropped, err := g.Store.Facts().DropTriggers(ctx); err != nil {
			fate = "could not drop its triggers: " + err.Error()
		} else if len(dropped) > 0 {
			fate = "triggers " + strings.Join(dropped, ", ") + " dropped"
		}
		found = append(found, fmt.Sprintf("%s: its schema changed (%s)", db, fate))
	}
	if before := s.unshielded; before != nil {
		now, ok, err := g.Store.Facts().UnshieldedSince(ctx)
		if err != nil || !ok || now.What != before.What || !now.At.Equal(before.At) {
			fate := outcome(g.Store.Facts().RestoreUnshielded(ctx, *before), "restored", "could not restore: ")
			found = append(found, fmt.Sprintf("%s: the record that unconfined processes ran here (%s)", db, fate))
		}
	}
	now, err := g.Store.TaskRecords(ctx, g.RunID, g.TaskID)
	if err != nil {
		return append(found, fmt.Sprintf("%s (could not read: %v)", db, err))
	}
	var forged, changed, deleted []string
	for id, digest := range now {
		switch before, had := s.db[id]; {
		case !had && id != g.RunID:
			forged = append(forged, id)
		case digest != before:
			changed = append(changed, id)
		}
	}
	for id := range s.db {
		if _, has := now[id]; !has {
			// A run of the task gone: with it, a fork point that refuses a landing built on
			// commits the target lost, or the PASS the branch's history is judged by.
			deleted = append(deleted, id)
		}
	}
	sort.Strings(forged)
	sort.Strings(changed)
	sort.Strings(deleted)
	if len(forged) > 0 {
		fate := outcome(g.Store.RemoveRuns(ctx, forged), "removed", "could not remove: ")
		found = append(found, fmt.Sprintf("%s: runs %s of task %s (%s)", db, strings.Join(forged, ", "), g.TaskID, fate))
	}
	if len(changed) > 0 {
		found = append(found, fmt.Sprintf("%s: records of runs %s (not restored)", db, strings.Join(changed, ", ")))
	}
	if len(deleted) > 0 {
		found = append(found, fmt.Sprintf("%s: runs %s of task %s deleted (not restored)", db, strings.Join(deleted, ", "), g.TaskID))
	}
	return append(found, g.checkPending(ctx, s)...)
}

// checkPending puts back every violation pending before the step that is cleared or gone now.
func (g *Guard) checkPending(ctx context.Context, s *Snapshot) []string {
	now, err := g.Store.PendingViolations(ctx)
	if err != nil {
		return []string{fmt.Sprintf("%s (could not read its violations: %v)", g.rel(g.normaPath("norma.db")), err)}
	}
	still := map[string]bool{}
	for _, v := range now {
		still[v.RunID] = true
	}
	var found []string
	for _, v := range s.pending {
		if !still[v.RunID] {
			fate := outcome(g.Store.RecordViolation(ctx, v), "restored", "could not restore: ")
			if _, err := g.Store.Run(ctx, v.RunID); errors.Is(err, store.ErrNotFound) {
				fate = "deleted with its run; not restored, this violation stands for it"
			}
			found = append(found, fmt.Sprintf("%s: the pending guard violation of run %s (%s)", g.rel(g.normaPath("norma.db")), v.RunID, fate))
		}
	}
	return found
}
