package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// PruneOptions are the choices of `git norma prune`; a negative keep value means "use the
// retention config".
type PruneOptions struct {
	KeepLast int
	KeepDays int
	DryRun   bool
	// Force also deletes task branches whose work never landed, and runs whose directory
	// keeps what the fallback guard replaced.
	Force bool
	// auto is the pass after every run: branches are only looked at when runs went (only then
	// can a branch lose its last retained run).
	auto bool
	// heldTask is the task whose lock the caller holds for its run heldRun (the pass after a
	// run): that run is live, the task's others are prune's to judge.
	heldTask, heldRun string
}

// PruneReport lists what was (or, with DryRun, would be) removed and what was kept and why.
type PruneReport struct {
	Runs     []string `json:"runs"`
	Branches []string `json:"branches"`
	Kept     []string `json:"kept"`
	DryRun   bool     `json:"dry_run"`
}

// Prune applies retention: old finished runs (their dirs, rows and worktrees — uncommitted
// work in a worktree is committed to its branch first) and task branches whose task is
// closed and whose changes are all on the target. A running run is never touched, and a
// branch holding work that never landed, or a run dir holding what the fallback guard
// replaced, is kept unless Force.
func (a *App) Prune(ctx context.Context, o PruneOptions) (PruneReport, error) {
	lock, err := acquireLock(a.Repo.Path("locks", "prune.lock"), "another git norma prune is running")
	if err != nil {
		return PruneReport{}, err
	}
	defer lock.Release()
	st, err := a.Repo.OpenStore(ctx)
	if err != nil {
		return PruneReport{}, err
	}
	defer st.Close()
	if !o.DryRun {
		// Runs whose process died are reconciled first, as a run's or a loop's start does: in a
		// clone whose dead run's task was closed elsewhere (another worker finished it), no run
		// of that task ever comes to do it, and retention never judges a running run.
		if tr, err := a.Tracker(); err == nil {
			base := &run{app: a, pre: &preflight{}, tr: tr, st: st, wm: a.Repo.Worktrees(ctx)}
			if err := base.reconcile(ctx); err != nil {
				return PruneReport{}, err
			}
		}
	}
	return a.pruner().prune(ctx, st, o)
}

// pruner applies retention; of the backlog it asks only whether a task is closed.
type pruner struct {
	repo      *Repo
	retention config.Retention
	now       func() time.Time
	tracker   func() (tracker.Tracker, error)
	validID   func(id string) error
	target    func(ctx context.Context) (string, error)
	// dryRemoved are the run worktrees a dry run found to go: a branch checked out only there
	// is judged as prune judges it once they are gone.
	dryRemoved map[string]bool
}

func (a *App) pruner() *pruner {
	return &pruner{repo: a.Repo, retention: a.Config.Retention, now: a.Now, tracker: a.Tracker,
		validID: a.ValidateTaskID, target: a.targetBranch}
}

// prune does the work. Runs of live processes may go on meanwhile: a running run is never
// touched, nor a branch checked out in a worktree.
func (p *pruner) prune(ctx context.Context, st *store.Store, o PruneOptions) (PruneReport, error) {
	if o.KeepLast < 0 {
		o.KeepLast = p.retention.KeepLast
	}
	if o.KeepDays < 0 {
		o.KeepDays = p.retention.KeepDays
	}
	rep := PruneReport{Runs: []string{}, Branches: []string{}, Kept: []string{}, DryRun: o.DryRun}
	runs, err := st.RecentRuns(ctx, 0)
	if err != nil {
		return rep, err
	}
	judged, err := p.judgeRuns(ctx, st, o, runs, &rep)
	if err != nil || o.auto && len(rep.Runs)+judged.cleared == 0 {
		return rep, err
	}
	if !o.DryRun {
		// A run worktree whose directory someone deleted is still locked (see
		// worktree.Manager.Create) and keeps its branch checked out: forget it first.
		err := p.repo.withWorktreeLock(ctx, func() error { return p.repo.Worktrees(ctx).ForgetVanished(ctx) })
		if err != nil {
			return rep, err
		}
	}
	if err := p.pruneBranches(ctx, o, judged.retained, &rep); err != nil {
		return rep, err
	}
	for _, r := range runs {
		switch why := judged.deferred[r.ID]; {
		case why == "":
		case slices.Contains(rep.Branches, worktree.TaskBranch(r.TaskID)):
			if err := p.removeRun(ctx, st, r, o.DryRun, &rep); err != nil {
				return rep, err
			}
			if judged.retained[r.TaskID] == r.ID {
				delete(judged.retained, r.TaskID) // a PASS --force took the branch of: its check worktree goes too
			}
		default:
			rep.Kept = append(rep.Kept, "run "+r.ID+": "+why)
		}
	}
	if !o.DryRun {
		p.pruneCheckTrees(ctx, judged.retained)
		p.pruneLeases(ctx)
	}
	return rep, p.pruneKept(ctx, o, runs, rep.Runs, &rep)
}

// judgedRuns is what prune's first pass over the runs, newest first, left to decide.
type judgedRuns struct {
	// retained maps a task to a run of it that is kept (its branch and check worktree stay).
	retained map[string]string
	// deferred are the runs kept only for a fork point the target has too, or for a PASS not
	// landed yet, with why: decided once prune knows whether their branch goes (--force: then
	// nothing of theirs can land).
	deferred map[string]string
	// cleared counts the runs kept for their fork point whose files went now: their branch may
	// go too.
	cleared int
}

// judgeRuns removes the runs retention lets go and nothing needs, reports those kept, and
// returns what is left to decide.
func (p *pruner) judgeRuns(ctx context.Context, st *store.Store, o PruneOptions, runs []store.Run, rep *PruneReport) (judgedRuns, error) {
	judged := judgedRuns{retained: map[string]string{}, deferred: map[string]string{}}
	violations, err := st.PendingViolations(ctx)
	if err != nil {
		return judged, err
	}
	cutoff := p.now().Add(-time.Duration(o.KeepDays) * 24 * time.Hour)
	scan := &pruneScan{newestPass: map[string]bool{}, violated: map[string]bool{}, forkDone: map[string]bool{}, forkOnly: map[string]bool{}, unlandedPass: map[string]bool{}}
	for _, v := range violations {
		scan.violated[v.RunID] = true
	}
	for i, r := range runs {
		running := r.Status == store.StatusRunning && !p.deadInDryRun(r, o)
		keep := running || i < o.KeepLast || (o.KeepDays > 0 && r.CreatedAt.After(cutoff))
		if !keep {
			var err error
			if keep, err = p.judgeRun(ctx, st, o, r, scan, &judged, rep); err != nil {
				return judged, err
			}
		}
		if r.Status == store.StatusPassed && r.PassHead != "" {
			// A PASS a landing could take; a check that was no verdict on the branch (of the
			// main checkout, say) takes no other's place.
			scan.newestPass[r.TaskID] = true
		}
		if keep {
			scan.forkDone[forkKey(r)] = true // older runs built there need not stay for it
			if judged.retained[r.TaskID] == "" && !scan.forkOnly[r.ID] {
				judged.retained[r.TaskID] = r.ID
			}
		}
	}
	return judged, nil
}

// deadInDryRun says whether a dry run judges r, marked running, as finished: prune itself
// reconciles a run whose task lock no process holds (marks it stopped) before judging it, and
// the dry run must say what prune then removes.
func (p *pruner) deadInDryRun(r store.Run, o PruneOptions) bool {
	if !o.DryRun || o.auto || r.TaskID == "" || p.validID(r.TaskID) != nil {
		return false
	}
	_, live := LiveLockHolder(p.repo.TaskLockPath(r.TaskID))
	return !live
}

// judgeRun removes r, which retention lets go, unless it is still needed; it says whether r
// stays. Under its task's lock: a run of the task starting meanwhile (freeing the branch from
// r's worktree, resuming from r's work) or landing it would have them moved or removed
// underneath it. While a live process holds the lock, r stays.
func (p *pruner) judgeRun(ctx context.Context, st *store.Store, o PruneOptions, r store.Run, scan *pruneScan, judged *judgedRuns, rep *PruneReport) (bool, error) {
	unlock, busy, err := p.lockTask(r, o)
	if err != nil {
		return false, err
	}
	defer unlock()
	if busy != "" {
		rep.Kept = append(rep.Kept, "run "+r.ID+": "+busy)
		return true, nil
	}
	why, err := p.stillNeeded(ctx, st, r, scan, o.Force)
	if err != nil {
		return false, err
	}
	switch {
	case why != "" && scan.forkOnly[r.ID]:
		// Only the record is needed: the worktree (its work saved) and the files go,
		// now, before the branches are judged: a worktree left would keep its branch
		// checked out, even with --force.
		_, had := os.Lstat(filepath.Join(p.repo.Root, filepath.FromSlash(r.RunDir)))
		stays, err := p.pruneRun(ctx, st, r, o.DryRun, true)
		if err != nil {
			return false, err
		}
		if had == nil {
			judged.cleared++
		}
		judged.deferred[r.ID] = cmp.Or(stays, why)
	case why != "" && scan.unlandedPass[r.ID]:
		judged.deferred[r.ID] = why
	case why != "":
		rep.Kept = append(rep.Kept, "run "+r.ID+": "+why)
	default:
		return false, p.removeRun(ctx, st, r, o.DryRun, rep)
	}
	return true, nil
}

// lockTask takes the lock of r's task for prune to decide on r and remove it, and returns its
// release; or why r stays when a live process holds it ("" otherwise): its process finishing
// it (landing), or another run of its task. A dry run only looks: its lock would keep a run of
// the task from starting.
func (p *pruner) lockTask(r store.Run, o PruneOptions) (func(), string, error) {
	lockPath := p.repo.TaskLockPath(r.TaskID)
	switch {
	case r.TaskID != "" && r.TaskID == o.heldTask: // the caller's: only its own run is live
		if r.ID == o.heldRun {
			return func() {}, busyTask(r, LockHolder{RunID: r.ID}), nil
		}
		return func() {}, "", nil
	case r.TaskID == "" || p.validID(r.TaskID) != nil:
		return func() {}, "", nil // no task: no run of it to lock out
	case o.DryRun:
		if h, live := LiveLockHolder(lockPath); live {
			return func() {}, busyTask(r, h), nil
		}
		return func() {}, "", nil
	}
	lock, err := p.repo.acquireTaskLock(r.TaskID)
	if errors.Is(err, ErrLocked) {
		h, _ := ReadLockHolder(lockPath)
		return func() {}, busyTask(r, h), nil
	} else if err != nil {
		return nil, "", err
	}
	return lock.Release, "", nil
}

// busyTask says why r stays while h holds its task's lock.
func busyTask(r store.Run, h LockHolder) string {
	if h.RunID == r.ID {
		return "its process is still finishing it"
	}
	return "a run of its task is in progress"
}

// removeRun prunes r whole and reports it, removed or kept (pruneRun).
func (p *pruner) removeRun(ctx context.Context, st *store.Store, r store.Run, dryRun bool, rep *PruneReport) error {
	why, err := p.pruneRun(ctx, st, r, dryRun, false)
	if why != "" {
		rep.Kept = append(rep.Kept, "run "+r.ID+": "+why)
	} else if err == nil {
		rep.Runs = append(rep.Runs, r.ID)
	}
	return err
}

// pruneCheckTrees removes, each under its task's lock, the check worktrees of tasks none of
// whose runs is retained; a task a live run holds keeps its own. A failure leaves it for the
// next prune.
func (p *pruner) pruneCheckTrees(ctx context.Context, retained map[string]string) {
	entries, _ := os.ReadDir(p.repo.Path("checks"))
	for _, e := range entries {
		task := e.Name()
		if !e.IsDir() || retained[task] != "" || strings.HasPrefix(task, ".") {
			continue
		}
		lock, err := p.repo.acquireTaskLock(task)
		if err != nil {
			continue
		}
		_ = p.repo.removeCheckTree(ctx, task)
		lock.Release()
	}
}

// pruneRun removes a finished run: its worktree (uncommitted work saved onto its task branch
// first), its directory and, unless keepRecord, its rows. It returns why the run stays ("" once
// removed): a worktree git cannot save is kept, and the rest of the prune goes on.
func (p *pruner) pruneRun(ctx context.Context, st *store.Store, r store.Run, dryRun, keepRecord bool) (string, error) {
	dir := filepath.Join(p.repo.Root, filepath.FromSlash(r.RunDir))
	if !strings.HasPrefix(dir, p.repo.Path("runs")+string(filepath.Separator)) {
		return "", fmt.Errorf("run %s has a run dir outside .norma/runs (%s); not touching it", r.ID, r.RunDir)
	}
	wsDir := filepath.Join(dir, "workspace")
	if dryRun {
		if p.dryRemoved == nil {
			p.dryRemoved = map[string]bool{}
		}
		p.dryRemoved[wsDir] = true
		return "", nil
	}
	if _, err := os.Stat(wsDir); err == nil {
		// Its uncommitted work is saved onto the task branch under the landing lock, as every
		// move of a task branch by git-norma: an unconfined step's fallback guard holds it, and
		// takes a task branch moved by no live run for its agent's doing. Not waited for: a
		// step may take minutes, and the next prune comes.
		now, cancel := context.WithCancel(ctx)
		cancel()
		unlock, err := p.repo.takeLandLock(now, fmt.Sprintf("git norma prune saving the work of run %s (process %d)", r.ID, os.Getpid()), "", nil, r.TaskID)
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return "its worktree's work is saved onto its branch under the landing lock, which " +
				lockHolder(p.repo.Path("locks", "land.lock")) + " holds; the next git norma prune does it", nil
		} else if err != nil {
			return "", err
		}
		// A stale index.lock is removed on the way; the run's events go with it.
		err = p.repo.withWorktreeLock(ctx, func() error { _, err := p.repo.Worktrees(ctx).Remove(ctx, wsDir, r.ID, r.TaskID); return err })
		unlock()
		if errors.Is(err, worktree.ErrNotWorktree) {
			// Its .git file went and git forgot it: its uncommitted files cannot be committed
			// anywhere, and deleting them would lose them.
			return "its workspace is no longer a git worktree, so its uncommitted files could not be saved; look at " +
				wsDir + ", then delete " + dir, nil
		}
		if err != nil {
			// Kept, and the rest pruned: one worktree git cannot save (a file its owner may
			// not read) must not stop every prune, and the retention after every run.
			return "its worktree could not be saved and removed (" + loop.OneLine(err.Error(), 300) + "); look at " +
				wsDir + ", then run git norma prune again", nil
		}
	}
	// What a step's tools made read-only there (its own step directory, a parent's checks'
	// scratch worktree) would fail this prune, and every one after it, halfway.
	worktree.GiveBackModes(dir)
	if err := os.RemoveAll(dir); err != nil || keepRecord {
		return "", err
	}
	return "", st.DeleteRun(ctx, r.ID)
}
