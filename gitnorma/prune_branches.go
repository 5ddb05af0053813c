package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/worktree"
)

// pruneKept deletes the branches runs set aside (refs/norma/kept/<task>/<run>[-...]) once that run
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
		// The run's own, under a name of its: <run>-conflict, <run>-overwritten-<sha>.
		runID, _, _ = strings.Cut(strings.TrimSuffix(runID, "-conflict"), "-overwritten-")
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
		if why != "" && !(o.Force && !p.checkedOut(b)) {
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

// pruneLeases deletes the lease refs (worktree.LeaseRef) of task branches this clone no longer
// has, or of remotes it no longer has: a run that takes the task up again fetches the remote's
// copy and leases it anew, while a stale lease keeps old step commits reachable (git log
// --all shows them). A task a live run holds keeps its lease; a failure leaves it for the
// next prune.
func (p *pruner) pruneLeases(ctx context.Context) {
	leases, err := p.repo.Worktrees(ctx).Leases(ctx)
	if err != nil || len(leases) == 0 {
		return
	}
	branches, err := p.repo.taskBranches(ctx)
	if err != nil {
		return
	}
	urls, _ := p.repo.Git.ConfigMatching(ctx, `^remote\..*\.url$`) // none: exit code 1
	have := map[string]bool{}
	for _, b := range branches {
		have[b.Branch] = true
	}
	for _, line := range strings.Split(urls, "\n") {
		if key, _, ok := strings.Cut(line, " "); ok {
			have["remote "+strings.TrimSuffix(strings.TrimPrefix(key, "remote."), ".url")] = true
		}
	}
	for _, l := range leases {
		task := strings.TrimPrefix(l.Branch, worktree.BranchPrefix)
		if have[l.Branch] && have["remote "+l.Remote] || p.validID(task) != nil {
			continue
		}
		lock, err := p.repo.acquireTaskLock(task)
		if err != nil {
			continue
		}
		// Under the lock no run makes the branch again meanwhile; one made since the look is kept.
		if _, err := p.repo.Git.Resolve(ctx, "refs/heads/"+l.Branch); err != nil || !have["remote "+l.Remote] {
			_ = p.repo.Git.DeleteRef(ctx, l.Ref, l.At)
		}
		lock.Release()
	}
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
	case p.checkedOut(b):
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

// checkedOut says whether b is checked out in a worktree that stays (see dryRemoved).
func (p *pruner) checkedOut(b BranchRow) bool {
	return b.Worktree != "" && !p.dryRemoved[filepath.Clean(b.Worktree)]
}

// landedAsRecorded says head landed on target as it is: a landing of task is head's squash
// commit (Manager.LandedAt). Any run's landing counts, not only that of the run head's commit
// names: a run that resumed an interrupted one's Do lands the head that run made. Read from
// git, it holds after the run's records were pruned, and for other clones' branches; the
// content, not the trailers alone, decides.
func (r *Repo) landedAsRecorded(ctx context.Context, task, head, target string) bool {
	return r.landingOfRun(ctx, target, task, "", head) != ""
}
