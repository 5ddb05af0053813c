package gitnorma

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/store"
)

// doctorClaims and doctorRechecks report what a git-norma killed between two records that
// belong together left, and what recovers it. A task a live process holds is not looked at:
// its run is not dead.

// doctorClaims looks at the runs that may hold a claim: those marked running (killed, maybe
// between claiming and recording it) and those that finished but never gave theirs back: a
// task still claimed by a run whose process died, or a PASS recorded and never landed.
func (a *App) doctorClaims(ctx context.Context, rep *DoctorReport, st *store.Store) {
	tr, err := a.Tracker()
	if err != nil {
		return
	}
	running, _ := st.RunsWithStatus(ctx, store.StatusRunning)
	held, _ := st.RunsWithClaim(ctx, store.ClaimHeld)
	seen := map[string]bool{}
	for _, r := range append(running, held...) {
		if seen[r.ID] || r.TaskID == "" {
			continue
		}
		seen[r.ID] = true
		if _, live := LiveLockHolder(a.Repo.TaskLockPath(r.TaskID)); live {
			continue
		}
		t, err := tr.Get(ctx, r.TaskID)
		if err != nil || !a.claimedBy(ctx, r, t) {
			continue
		}
		if r.Status == store.StatusPassed && r.LandedCommit == "" && r.PassHead != "" {
			fix := "git norma loop or git norma run " + r.TaskID + " (lands it, re-checked if the target moved)"
			if a.Config.RecoverPassed == config.RecoverReopen {
				fix = "git norma loop or git norma run " + r.TaskID + " (reopens the task: recover_passed is reopen)"
			}
			rep.add("run "+r.ID, "warn", fmt.Sprintf("PASS of %s recorded on %.10s, never landed: its process died; the task stays in_progress", r.TaskID, r.PassHead), fix)
			continue
		}
		rep.add("claim "+r.TaskID, "warn", fmt.Sprintf("in_progress, claimed by run %s whose process died", r.ID),
			"git norma run "+r.TaskID+" or git norma loop (either gives the claim back first)")
	}
}

// doctorRechecks reports a landing re-check's workspace whose process is gone: git refuses to
// add it again, so it would fail that landing until it goes.
func doctorRechecks(ctx context.Context, repo *Repo, rep *DoctorReport, st *store.Store) {
	dirs, _ := filepath.Glob(repo.Path("runs", "*", "recheck", "workspace"))
	for _, dir := range dirs {
		r, err := st.Run(ctx, filepath.Base(filepath.Dir(filepath.Dir(dir))))
		if err != nil || r.TaskID == "" {
			continue
		}
		if _, live := LiveLockHolder(repo.TaskLockPath(r.TaskID)); live {
			continue // a landing is re-checking right now
		}
		rep.add("re-check "+r.ID, "warn", "a landing re-check left its workspace behind (its process died): "+dir,
			"git norma land "+r.TaskID+" or git norma run "+r.TaskID+" (removes it)")
	}
}
