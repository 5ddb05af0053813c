package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/worktree"
)

// Why a run retention would remove has to stay.

// stillNeeded says why a finished run that retention would remove has to stay, or "": its
// guard violation or mark is pending, its directory keeps what the guard replaced (unless
// force), its record keeps a landing from bringing back its fork point (forkPointNeeded), or
// it is its task's newest PASS, not landed, and its branch is still at the verified commit
// (`git norma land` needs its record). scan carries what the runs before r told (runs go
// newest first).
func (p *pruner) stillNeeded(ctx context.Context, st *store.Store, r store.Run, scan *pruneScan, force bool) (string, error) {
	if scan.violated[r.ID] {
		// Its row carries the violation: deleting it would let run and loop start again.
		return "its guard violation is pending (look at it: git norma status " + r.ID + "; then: git norma resume)", nil
	}
	if r.GuardPending {
		// Its row carries the mark that the guard never looked after its unconfined processes
		// (a landing killed while its checks ran), which the next run records as a violation.
		return "the guard never looked after its unconfined processes (the next git norma run reports it)", nil
	}
	if (r.Claim == store.ClaimHeld || r.Claim == store.ClaimIntent) && r.Status != store.StatusRunning && !force && p.mayBeClaimed(ctx, r.TaskID) {
		// Its process died holding the task's claim, and no recovery could give it back yet (the
		// tracker did not answer): without its row, none ever would, and the task would stay
		// in progress for good.
		return "its claim on task " + r.TaskID + " was never given back (the next git norma run or loop gives it back once the tracker answers; or use --force, then set the task back to open yourself)", nil
	}
	if kept := p.guardKept(r); len(kept) > 0 && !force {
		// What a restore replaced may be the user's edit made during the step: theirs, not the
		// run's, to drop (its fork-point record alone would not keep its directory either).
		return "the fallback guard kept there what it replaced, which may be your edit made during the run (look at " +
			strings.Join(kept, ", ") + " and delete it once you have what you need; or use --force to delete it with the run)", nil
	}
	fork, err := p.forkPointNeeded(ctx, r, scan)
	if err != nil || fork != "" && !scan.forkOnly[r.ID] {
		return fork, err
	}
	if r.Status != store.StatusPassed || scan.newestPass[r.TaskID] {
		return fork, nil
	}
	if r.LandedCommit != "" || r.PassHead == "" {
		return fork, nil // landed, or nothing a landing could take (a check of a dirty worktree)
	}
	head, err := p.repo.Git.Resolve(ctx, "refs/heads/"+worktree.TaskBranch(r.TaskID))
	switch {
	case git.ExitCodeOf(err) == 1 || err == nil && head != r.PassHead:
		return fork, nil
	case err != nil:
		return "", err // not knowing is no reason to drop a verified record
	}
	delete(scan.forkOnly, r.ID) // kept for its PASS, which keeps its branch too
	scan.unlandedPass[r.ID] = true
	return "passed and not landed yet (land it with: git norma land " + r.TaskID + ")", nil
}

// mayBeClaimed says whether taskID may still carry a claim a dead run never gave back: it is in
// progress, or the tracker cannot say. A task in progress for nobody (the claim never reached
// the tracker, or someone closed or reopened it since) has none to give back, and no recovery
// would ever clear the run's record of it: kept for that, the run would stay for good.
func (p *pruner) mayBeClaimed(ctx context.Context, taskID string) bool {
	tr, err := p.tracker()
	if err != nil {
		return true
	}
	t, err := tr.Get(ctx, taskID)
	if errors.Is(err, tracker.ErrNotFound) {
		return false
	}
	return err != nil || t.Status == tracker.StatusInProgress
}

// guardKept lists, relative to the repository, what the fallback guard kept in r's directory
// of the files its restores replaced (guard.KeptPrefix, backlogReplacedName).
func (p *pruner) guardKept(r store.Run) []string {
	entries, _ := os.ReadDir(filepath.Join(p.repo.Root, filepath.FromSlash(r.RunDir)))
	var kept []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), guard.KeptPrefix) || e.Name() == backlogReplacedName {
			kept = append(kept, path.Join(r.RunDir, e.Name()))
		}
	}
	return kept
}

// forkPointNeeded says why r's row must stay for its fork point ("" when it need not): its
// task branch still holds the target commit the run was built on. The landing reads that row
// (checkForkPoints): while the target no longer has the commit (amended, reset or rebased
// away), it refuses a landing that would bring it back; while the target has it, it stays for
// the day the user takes it off (forkOnly: it keeps neither branch nor check worktree). The
// newest run built there is enough: the older ones go.
func (p *pruner) forkPointNeeded(ctx context.Context, r store.Run, scan *pruneScan) (string, error) {
	key := forkKey(r)
	if r.Fork.Base == "" || r.TaskID == "" || scan.forkDone[key] {
		return "", nil
	}
	why, onTarget, err := p.forkPointKept(ctx, r.TaskID, r.Fork.Base, scan)
	if err == nil {
		scan.forkDone[key], scan.forkOnly[r.ID] = true, onTarget && why != ""
	}
	return why, err
}

// forkKey names a run's fork point: its task and the commit (the runs of a task mostly share it).
func forkKey(r store.Run) string { return r.TaskID + "\x00" + r.Fork.Base }

// forkPointKept says why the runs of task built on base stay (see forkPointNeeded), and
// whether the target still has base.
func (p *pruner) forkPointKept(ctx context.Context, task, base string, scan *pruneScan) (string, bool, error) {
	branch := worktree.TaskBranch(task)
	head, err := p.repo.Git.Resolve(ctx, "refs/heads/"+branch)
	switch {
	case git.ExitCodeOf(err) == 1:
		return "", false, nil // no branch, nothing to land
	case err != nil:
		return "", false, err
	}
	inBranch, err := p.repo.Git.IsAncestor(ctx, base, head)
	switch {
	case err != nil:
		// Not knowing is no reason to drop what refuses a landing: the commit may be missing
		// only for now (an object moved aside, alternates on a disk not mounted).
		return fmt.Sprintf("git cannot tell whether %s holds %.10s, which it was built on; this run's record keeps its landing from bringing it back (rebuild the branch or delete it)", branch, base), false, nil
	case !inBranch:
		return "", false, nil // rebuilt without it
	}
	target, terr := scan.targetOf(ctx, p)
	if terr == nil {
		if onTarget, err := p.repo.Git.IsAncestor(ctx, base, "refs/heads/"+target); err == nil && onTarget {
			return fmt.Sprintf("%s is built on %.10s: this run's record keeps its landing from bringing that commit back, should it leave %s", branch, base, target), true, nil
		}
	}
	// Not knowing the target is no reason to drop what refuses a landing.
	return fmt.Sprintf("%s is built on %.10s, which the target no longer has; this run's record keeps its landing from bringing it back (rebuild the branch or delete it)", branch, base), false, nil
}

// pruneScan is what prune learns about tasks as it goes through their runs, newest first.
type pruneScan struct {
	// newestPass holds the tasks whose newest passed run has been seen.
	newestPass map[string]bool
	// violated holds the runs whose guard violation the user has not cleared.
	violated map[string]bool
	// forkDone holds the fork points (forkKey) an older run need not stay for: a newer run
	// built there stays, or none needs to.
	forkDone map[string]bool
	// forkOnly holds the runs kept for a fork point the target has too (forkPointNeeded).
	forkOnly map[string]bool
	// unlandedPass holds the runs kept for their PASS not landed yet.
	unlandedPass map[string]bool
	// target is the target branch, asked once (targetErr if it could not be told).
	target    *string
	targetErr error
}

func (s *pruneScan) targetOf(ctx context.Context, p *pruner) (string, error) {
	if s.target == nil {
		t, err := p.target(ctx)
		s.target, s.targetErr = &t, err
	}
	return *s.target, s.targetErr
}
