package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/worktree"
)

// PruneOptions are the choices of `git norma prune`; a negative keep value means "use the
// retention config".
type PruneOptions struct {
	KeepLast int
	KeepDays int
	DryRun   bool
	// Force also deletes task branches whose work never landed.
	Force bool
	// auto is the pass after every run: branches are only looked at when runs went (only then
	// can a branch lose its last retained run).
	auto bool
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
// branch holding work that never landed is kept unless Force.
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
	violations, err := st.PendingViolations(ctx)
	if err != nil {
		return rep, err
	}
	cutoff := p.now().Add(-time.Duration(o.KeepDays) * 24 * time.Hour)
	retained := map[string]string{} // task → a run of it that is kept
	scan := &pruneScan{newestPass: map[string]bool{}, live: map[string]string{}, violated: map[string]bool{}}
	for _, v := range violations {
		scan.violated[v.RunID] = true
	}
	for i, r := range runs {
		keep := r.Status == store.StatusRunning || i < o.KeepLast || (o.KeepDays > 0 && r.CreatedAt.After(cutoff))
		if !keep {
			why, err := p.stillNeeded(ctx, st, r, scan)
			if err != nil {
				return rep, err
			}
			if keep = why != ""; keep {
				rep.Kept = append(rep.Kept, "run "+r.ID+": "+why)
			}
		}
		if r.Status == store.StatusPassed {
			scan.newestPass[r.TaskID] = true
		}
		if keep {
			if retained[r.TaskID] == "" {
				retained[r.TaskID] = r.ID
			}
			continue
		}
		why, err := p.pruneRun(ctx, st, r, o.DryRun)
		if err != nil {
			return rep, err
		}
		if why != "" {
			rep.Kept = append(rep.Kept, "run "+r.ID+": "+why)
			continue
		}
		rep.Runs = append(rep.Runs, r.ID)
	}
	if o.auto && len(rep.Runs) == 0 {
		return rep, nil
	}
	if !o.DryRun {
		// A run worktree whose directory someone deleted is still locked (see
		// worktree.Manager.Create) and keeps its branch checked out: forget it first.
		err := p.repo.withWorktreeLock(ctx, func() error { return p.repo.Worktrees(ctx).ForgetVanished(ctx) })
		if err != nil {
			return rep, err
		}
	}
	if err := p.pruneBranches(ctx, o, retained, &rep); err != nil {
		return rep, err
	}
	if !o.DryRun {
		p.pruneCheckTrees(ctx, retained)
	}
	return rep, p.pruneKept(ctx, o, runs, rep.Runs, &rep)
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

// stillNeeded says why a finished run that retention would remove has to stay, or "": its
// process is still finishing it (landing), or it is its task's newest PASS, not landed, and
// its branch is still at the verified commit (`git norma land` needs its record). scan
// carries what the runs before r told (runs go newest first).
func (p *pruner) stillNeeded(ctx context.Context, st *store.Store, r store.Run, scan *pruneScan) (string, error) {
	if scan.liveRun(p.repo, r.TaskID) == r.ID {
		return "its process is still finishing it", nil
	}
	if scan.violated[r.ID] {
		// Its row carries the violation: deleting it would let run and loop start again.
		return "its guard violation is pending (look at it: git norma status " + r.ID + "; then: git norma resume)", nil
	}
	if r.Status != store.StatusPassed || scan.newestPass[r.TaskID] {
		return "", nil
	}
	if r.LandedCommit != "" || r.PassHead == "" {
		return "", nil // landed, or nothing a landing could take (a check of a dirty worktree)
	}
	head, err := p.repo.Git.Resolve(ctx, "refs/heads/"+worktree.TaskBranch(r.TaskID))
	switch {
	case git.ExitCodeOf(err) == 1 || err == nil && head != r.PassHead:
		return "", nil
	case err != nil:
		return "", err // not knowing is no reason to drop a verified record
	}
	return "passed and not landed yet (land it with: git norma land " + r.TaskID + ")", nil
}

// pruneScan is what prune learns about tasks as it goes through their runs, newest first.
type pruneScan struct {
	// newestPass holds the tasks whose newest passed run has been seen.
	newestPass map[string]bool
	// live maps a task to the run a live process holds its lock for ("" for none), asked once.
	live map[string]string
	// violated holds the runs whose guard violation the user has not cleared.
	violated map[string]bool
}

func (s *pruneScan) liveRun(repo *Repo, taskID string) string {
	run, known := s.live[taskID]
	if !known {
		if h, live := LiveLockHolder(repo.TaskLockPath(taskID)); live {
			run = h.RunID
		}
		s.live[taskID] = run
	}
	return run
}

// pruneKept deletes the branches runs set aside (refs/norma/kept/<task>/<run>) once that run
// is pruned, its task closed and all of it on the target. Being work that did not land, a
// kept branch usually stays until --force.
func (p *pruner) pruneKept(ctx context.Context, o PruneOptions, runs []store.Run, pruned []string, rep *PruneReport) error {
	out, err := p.repo.Git.ForEachRef(ctx, "%(objectname) %(refname)", worktree.KeptPrefix)
	if err != nil || out == "" {
		return err
	}
	retainedRuns := map[string]bool{}
	for _, r := range runs {
		retainedRuns[r.ID] = true
	}
	for _, id := range pruned {
		delete(retainedRuns, id)
	}
	tr, err := p.tracker()
	if err != nil {
		return err
	}
	target, err := p.target(ctx)
	if err != nil {
		target = "" // without a target there is no telling what landed: keep them (below)
	}
	for _, line := range strings.Split(out, "\n") {
		head, ref, _ := strings.Cut(line, " ")
		task, runID, ok := strings.Cut(strings.TrimPrefix(ref, worktree.KeptPrefix), "/")
		if !ok || retainedRuns[runID] {
			continue // its run is retained
		}
		if why := p.keepKept(ctx, tr, target, task, head); why != "" && !o.Force {
			rep.Kept = append(rep.Kept, ref+": "+why+" (use --force to delete anyway)")
			continue
		}
		if !o.DryRun {
			// Deleted only as judged: the head compared with the target above.
			if err := p.repo.Git.DeleteRef(ctx, ref, head); err != nil {
				why, gone, rerr := p.repo.movedFrom(ctx, ref, head)
				switch {
				case rerr == nil && gone:
					continue // someone else deleted it meanwhile
				case rerr == nil && why != "":
					rep.Kept = append(rep.Kept, ref+": "+why)
					continue
				}
				return err
			}
		}
		rep.Branches = append(rep.Branches, ref)
	}
	return nil
}

// pruneRun removes a finished run; it returns why the run stays ("" once it is gone).
func (p *pruner) pruneRun(ctx context.Context, st *store.Store, r store.Run, dryRun bool) (string, error) {
	dir := filepath.Join(p.repo.Root, filepath.FromSlash(r.RunDir))
	if !strings.HasPrefix(dir, p.repo.Path("runs")+string(filepath.Separator)) {
		return "", fmt.Errorf("run %s has a run dir outside .norma/runs (%s); not touching it", r.ID, r.RunDir)
	}
	if dryRun {
		return "", nil
	}
	wsDir := filepath.Join(dir, "workspace")
	if _, err := os.Stat(wsDir); err == nil {
		// A stale index.lock is removed on the way; the run's events go with it.
		err := p.repo.withWorktreeLock(ctx, func() error { _, err := p.repo.Worktrees(ctx).Remove(ctx, wsDir, r.ID, r.TaskID); return err })
		if errors.Is(err, worktree.ErrNotWorktree) {
			// Its .git file went and git forgot it: its uncommitted files cannot be committed
			// anywhere, and deleting them would lose them.
			return "its workspace is no longer a git worktree, so its uncommitted files could not be saved; look at " +
				wsDir + ", then delete " + dir, nil
		}
		if err != nil {
			return "", err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return "", st.DeleteRun(ctx, r.ID)
}

// pruneBranches deletes landed task branches (task closed, nothing left to land) once no
// retained run refers to them: a landed branch stays for review as long as its run does.
func (p *pruner) pruneBranches(ctx context.Context, o PruneOptions, retained map[string]string, rep *PruneReport) error {
	target, err := p.target(ctx)
	if err != nil {
		return nil // without a target there is no telling what landed; keep every branch
	}
	branches, err := p.repo.taskBranches(ctx)
	if err != nil || len(branches) == 0 {
		return err
	}
	tr, err := p.tracker()
	if err != nil {
		return err
	}
	tasks, err := tr.List(ctx)
	if err != nil {
		return err
	}
	status := map[string]string{}
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	for _, b := range branches {
		why := p.keepBranch(ctx, b, status[b.Task], target)
		if why == "" && retained[b.Task] != "" {
			why = "run " + retained[b.Task] + " of its task is retained"
		}
		if why != "" && !(o.Force && b.Worktree == "") {
			rep.Kept = append(rep.Kept, b.Branch+": "+why)
			continue
		}
		if !o.DryRun {
			why, err := p.deleteBranchAsJudged(ctx, b)
			if err != nil {
				return err
			}
			if why != "" {
				rep.Kept = append(rep.Kept, b.Branch+": "+why)
				continue
			}
		}
		rep.Branches = append(rep.Branches, b.Branch)
	}
	return nil
}

// deleteBranchAsJudged deletes a task branch only as prune judged it: under its task's lock
// (no run moves or checks it out meanwhile), only if still at the judged head (a commit made
// since is never deleted), and through git branch -D, which refuses a branch checked out,
// rebasing or bisecting, and drops its config. It returns why the branch stays ("" once it is
// gone).
func (p *pruner) deleteBranchAsJudged(ctx context.Context, b BranchRow) (string, error) {
	if p.validID(b.Task) == nil { // a stray name under norma/task/ has no runs to lock out
		lock, err := p.repo.acquireTaskLock(b.Task)
		if errors.Is(err, ErrLocked) {
			return "a run of its task is in progress", nil
		} else if err != nil {
			return "", err
		}
		defer lock.Release()
	}
	return p.repo.deleteBranchAt(ctx, b.Branch, b.Head)
}

// deleteBranchAt deletes branch if it is still at head; it returns why it stays ("" once it is
// gone). The callers hold the task's lock: only a user's git command could move it meanwhile.
func (r *Repo) deleteBranchAt(ctx context.Context, branch, head string) (string, error) {
	if why, gone, err := r.movedFrom(ctx, "refs/heads/"+branch, head); err != nil || gone || why != "" {
		return why, err // gone already: nothing to keep
	}
	if err := r.Git.DeleteBranch(ctx, branch); err != nil {
		if msg := strings.TrimSpace(git.StderrOf(err)); msg != "" {
			return "git refused to delete it: " + msg, nil
		}
		return "", err
	}
	return "", nil
}

// movedFrom says why ref is no longer the judged head ("" while it is), or that it is gone.
func (r *Repo) movedFrom(ctx context.Context, ref, head string) (why string, gone bool, err error) {
	now, err := r.Git.Resolve(ctx, ref)
	switch {
	case err != nil && git.ExitCodeOf(err) == 1:
		return "", true, nil
	case err != nil:
		return "", false, err
	case now != head:
		return fmt.Sprintf("it moved to %.10s since it was judged at %.10s", now, head), false, nil
	}
	return "", false, nil
}

// keepKept says why a kept branch at head must stay ("" when it may go).
func (p *pruner) keepKept(ctx context.Context, tr tracker.Tracker, target, task, head string) string {
	if t, err := tr.Get(ctx, task); err != nil || t.Status != tracker.StatusClosed {
		return "its task is not closed"
	}
	if target == "" {
		return "there is no target to compare it with"
	}
	if landed, err := p.repo.Worktrees(ctx).LandedRef(ctx, target, head); err != nil || !landed {
		return "it has changes that are not on " + target
	}
	return ""
}

// keepBranch says why a task branch must stay ("" when it may go).
func (p *pruner) keepBranch(ctx context.Context, b BranchRow, taskStatus, target string) string {
	switch {
	case b.Worktree != "":
		return "checked out in " + b.Worktree
	case taskStatus == "":
		return "its task is not in the backlog (use --force to delete anyway)"
	case taskStatus != tracker.StatusClosed:
		return "its task is " + taskStatus + " (use --force to delete anyway)"
	}
	landed, err := p.repo.Worktrees(ctx).LandedRef(ctx, target, b.Head) // the head that may be deleted
	if (err == nil || errors.Is(err, worktree.ErrConflict)) && !landed {
		// Merging it again differs, or conflicts, when later commits touched the same lines;
		// its landing, naming the run that made its head, still says it landed.
		landed, err = p.repo.landedAsRecorded(ctx, b.Task, b.Head, target), nil
	}
	if err != nil || !landed {
		return "it has changes that are not on " + target + " (use --force to delete anyway)"
	}
	return ""
}

// landedAsRecorded says head landed on target as it is: a landing of task names the run that
// made head (its Norma-Run trailer) and is head's squash commit (Manager.LandedAt). Read from
// git, it holds after the run's records were pruned, and for other clones' branches; the
// content, not the trailers alone, decides.
func (r *Repo) landedAsRecorded(ctx context.Context, task, head, target string) bool {
	run, err := r.Git.Log(ctx, "%(trailers:key=Norma-Run,valueonly,separator=%x2C)", git.LogQuery{Revs: []string{head}, Max: 1})
	return err == nil && run != "" && !strings.Contains(run, ",") && r.landingOfRun(ctx, target, task, run, head) != ""
}
