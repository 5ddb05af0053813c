package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// LabelLandContended marks a task whose PASS could not be pushed: other workers landed first
// at every attempt. Its branch is pushed for review; `git norma land` lands it later.
const LabelLandContended = "norma-land-contended"

// remoteLandAttempts bounds the tries of a landing that loses the race for the remote's target.
const remoteLandAttempts = 5

// landRetryPause is a random 100–600 ms pause between landing attempts, so workers whose
// pushes collided do not collide again.
func landRetryPause() time.Duration {
	return 100*time.Millisecond + rand.N(500*time.Millisecond)
}

// syncTarget brings the local target to the remote's, when landing through a remote (config
// "remote", --remote): runs fork from it and landings are built on it.
func (ld *lander) syncTarget(ctx context.Context, target string) error {
	if ld.cfg.Remote == "" {
		return nil
	}
	if err := ld.repo.Worktrees(ctx).Remote(ld.cfg.Remote).FetchTarget(ctx, target, true); err != nil {
		return ld.syncRefused(target, err)
	}
	return ld.followTarget(ctx, target)
}

// followTarget fast-forwards the local target to the remote's as last fetched, under the
// worktree lock: it reads which worktree has the target checked out.
func (ld *lander) followTarget(ctx context.Context, target string) error {
	var err error
	lockErr := ld.repo.withWorktreeLock(ctx, func() error {
		_, err = ld.repo.Worktrees(ctx).Remote(ld.cfg.Remote).FollowTarget(ctx, target)
		return nil
	})
	if lockErr != nil {
		return lockErr
	}
	return ld.syncRefused(target, err)
}

// syncRefused is err, a failure to bring target up to the remote's, as the refusal that says
// what to do.
func (ld *lander) syncRefused(target string, err error) error {
	if err == nil {
		return nil
	}
	remote := ld.cfg.Remote
	hint := fmt.Sprintf("check that the remote answers: git ls-remote %s %s", remote, target)
	switch {
	case errors.Is(err, worktree.ErrTargetRewound):
		hint = rewoundHint(remote, target)
	case errors.Is(err, worktree.ErrTargetAhead):
		hint = fmt.Sprintf("put your commits on the remote's first (%s), or move them to a branch of their own: git-norma lands through %s and never pushes your commits", publishCommits(remote, target), remote)
	case errors.Is(err, worktree.ErrDirtyOverlap):
		hint = fmt.Sprintf("commit or stash your changes to those files in the checkout of %s", target)
	case errors.Is(err, worktree.ErrTargetBusy):
		hint = fmt.Sprintf("finish (or abort) what is working on %s first", target)
	}
	return &landRefusal{reason: fmt.Errorf("cannot bring %s up to %s/%s: %w", target, remote, target, err), hint: hint}
}

// publishCommits are the commands that put the local target's own commits on the remote's:
// a plain push is refused once the remote moved on too (another worker landed meanwhile).
func publishCommits(remote, target string) string {
	return fmt.Sprintf("git pull --rebase %s %s && git push %s %s", remote, target, remote, target)
}

// rewoundHint is what to do when the local target has commits the remote had, and lost to a
// force-push: not "your commits" to push (that would undo the rewrite), the user's call.
func rewoundHint(remote, target string) string {
	return fmt.Sprintf("%s/%s was rewritten (force-pushed) since %s took these commits from it: to follow it, git switch %s && git reset --keep %s/%s; to put them back, %s",
		remote, target, target, target, remote, target, publishCommits(remote, target))
}

// syncTargetLocked is syncTarget for a run's start: every move of the target by git-norma
// waits for a landing under way (which builds on the tip it checked) and for an unconfined
// step's fallback guard (which takes any move of the target meanwhile for the agent's), so the
// move is under the landing lock. The fetch is not: a remote slow to answer would hold up
// every other run's landing and guard. Unforced, it cannot set the remote-tracking ref back
// when it read the remote before another run's landing moved both on; when it fails (that, a
// force-push, or no answer) the fetch is made again under the lock, forced, as a landing's.
func (a *App) syncTargetLocked(ctx context.Context, target string, live loop.LiveFunc, taskID string) error {
	if a.Config.Remote == "" {
		return nil
	}
	ld := a.lander()
	fetchErr := a.Repo.Worktrees(ctx).Remote(a.Config.Remote).FetchTarget(ctx, target, false)
	unlock, err := a.Repo.takeLandLock(ctx, fmt.Sprintf("a run of %s bringing %s up to %s/%s (process %d)", taskID, target, a.Config.Remote, target, os.Getpid()),
		fmt.Sprintf("bring %s up to %s/%s", target, a.Config.Remote, target), live, taskID)
	if err != nil {
		return err
	}
	defer unlock()
	if fetchErr != nil {
		return ld.syncTarget(ctx, target)
	}
	err = ld.followTarget(ctx, target)
	if r := (*landRefusal)(nil); errors.As(err, &r) && errors.Is(r.reason, worktree.ErrTargetAhead) {
		// The fetch may have read the remote before another run's landing moved it and the
		// local target on: fetch again, now that no landing can come in between.
		return ld.syncTarget(ctx, target)
	}
	return err
}

// UseRemote makes git-norma land through remote (the --remote flag), in place of the
// configured one.
func (a *App) UseRemote(ctx context.Context, remote string) error {
	a.Config.Remote = remote
	return a.checkRemote(ctx)
}

// checkRemote refuses a remote git does not know, and a remote with the embedded backlog,
// whose claims are in each clone's own file: two machines would run the same task.
func (a *App) checkRemote(ctx context.Context) error {
	remote := a.Config.Remote
	if remote == "" {
		return nil
	}
	if strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, " \t\n:") {
		return usagef("give the name of a configured remote (see: git remote -v)", "%q is not a remote name", remote)
	}
	if _, err := a.Repo.Git.Config(ctx, "remote."+remote+".url"); err != nil {
		return fatalf("see the configured remotes with: git remote -v; add this one with: git remote add "+remote+" <url>",
			"no remote %q in this repository", remote)
	}
	if a.TrackerKind() != "beads" {
		return fatalf(`share the backlog in bd on a Dolt server (bd init --server; see "Many machines" in the README), then: git norma init --beads`,
			"landing through remote %q needs the bd backlog: the embedded backlog's claims are in each clone's own copy of .beads/issues.jsonl, so workers on two machines would run the same task", remote)
	}
	return nil
}

// shareJournal pushes refs/notes/norma to the remote a landing went to, merging theirs first
// (cat_sort_uniq: no line is lost), and again after a push that lost a race. A failure is
// recorded; the landing stands (git norma notes push sends it later).
func (ld *lander) shareJournal(ctx context.Context, st *store.Store, req landRequest) {
	remote := ld.cfg.Remote
	if remote == "" {
		return
	}
	var err error
	for attempt := 0; attempt < remoteLandAttempts; attempt++ {
		if err = ld.repo.NotesJournal().Push(ctx, remote); !errors.Is(err, notes.ErrRejected) {
			break
		}
		if worktree.Sleep(ctx, landRetryPause()) != nil {
			break
		}
	}
	if err != nil {
		_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "notes_push_failed",
			Message: fmt.Sprintf("the journal was not pushed to %s: %v (push it with: git norma notes push %s)", remote, err, remote)})
	}
}

// contended leaves a task whose landing kept losing the race for the remote to a person: it
// gets LabelLandContended and its branch is pushed for review.
func (ld *lander) contended(ctx context.Context, req landRequest, attempts int, head string, last error) error {
	branch := worktree.TaskBranch(req.task.ID)
	pushed := ""
	// Under the branch's lease, like every push of it: never over another worker's.
	if err := ld.repo.Worktrees(ctx).Remote(ld.cfg.Remote).PushTaskBranch(ctx, req.task.ID, "refs/heads/"+branch); err == nil {
		pushed = fmt.Sprintf("; its branch is on %s for review", ld.cfg.Remote)
	}
	if tr, err := ld.tracker(); err == nil {
		_ = tr.Update(ctx, req.task.ID, tracker.Update{AddLabels: []string{LabelLandContended}})
	}
	return &landRefusal{reason: fmt.Errorf("%d landings on %s/%s lost the race to other workers (last: %v)%s", attempts, ld.cfg.Remote, req.target, last, pushed),
		hint: "land it when the remote is quieter: git norma land " + req.task.ID, resumeAt: head}
}

// landedAfterAll takes off a task that has landed after all the labels a refused landing left
// on it: LabelLandContended, and the resume labels (a `git norma land` took the place of the
// run that would have resumed), which would have a person's reopening of it resume stale work.
// Called before the task is closed (a process killed in between would leave them on a closed
// task), whenever task, as read before the landing, has any of them: the contended label is a
// hint a teammate may have taken off alone.
func landedAfterAll(ctx context.Context, tr tracker.Tracker, task tracker.Task) {
	left := func(l string) bool {
		return slices.Contains([]string{LabelLandContended, LabelHasPlan, LabelHasDo, LabelHasCheck}, l)
	}
	if !slices.ContainsFunc(task.Labels, left) {
		return
	}
	t, err := tr.Get(ctx, task.ID)
	if err != nil {
		return
	}
	drop := slices.DeleteFunc(slices.Clone(t.Labels), func(l string) bool { return !left(l) })
	if len(drop) > 0 {
		_ = tr.Update(ctx, task.ID, tracker.Update{RemoveLabels: drop})
	}
}

// doctorRemote checks a configured remote: git knows and reaches it, the backlog can be
// shared (bd), and the local target has nothing the remote lacks.
func (a *App) doctorRemote(ctx context.Context, rep *DoctorReport) {
	remote := a.Config.Remote
	if remote == "" {
		return
	}
	if err := a.checkRemote(ctx); err != nil {
		rep.add("remote", "fail", err.Error(), hintOf(err))
		return
	}
	target, err := a.targetBranch(ctx)
	if err != nil {
		return // the target branch finding says why
	}
	heads, err := a.Repo.Git.RemoteHeads(ctx, remote, target)
	theirs := heads[target]
	switch {
	case err != nil:
		rep.add("remote", "fail", fmt.Sprintf("%s cannot be reached: %v", remote, err), "check its URL (git remote get-url "+remote+") and your access (git ls-remote "+remote+")")
		return
	case theirs == "":
		rep.add("remote", "fail", fmt.Sprintf("%s has no branch %s", remote, target), fmt.Sprintf("push it first: git push %s %s", remote, target))
		return
	}
	ours, _ := a.Repo.Git.Resolve(ctx, "refs/heads/"+target)
	if ours != theirs && a.Repo.Git.HasCommit(ctx, theirs) {
		// The remote's tip is known here: the local target must be behind it, not ahead.
		if behind, err := a.Repo.Git.IsAncestor(ctx, ours, theirs); err == nil && !behind {
			fix := fmt.Sprintf("put them on the remote's (%s), or move them to a branch of their own", publishCommits(remote, target))
			if a.Repo.Worktrees(ctx).Remote(remote).HadTip(ctx, target, ours) {
				fix = rewoundHint(remote, target)
			}
			rep.add("remote", "fail", fmt.Sprintf("the local %s has commits %s/%s lacks: runs and landings are refused", target, remote, target), fix)
			return
		}
	}
	rep.add("remote", "ok", fmt.Sprintf("lands on %s/%s as %s", remote, target, a.Config.WorkerID()), "")
}

// doctorLeases lists the tasks in progress whose lease ran out: the next loop reopens them.
func (a *App) doctorLeases(ctx context.Context, rep *DoctorReport) {
	tr, err := a.Tracker()
	if err != nil {
		return
	}
	gone, _ := a.leases().expired(ctx, tr)
	for _, e := range gone {
		rep.add("lease "+e.task.ID, "warn", fmt.Sprintf("in_progress, claimed by %s, whose lease ran out at %s: its worker stopped", loop.OrDash(e.task.Assignee), e.until.Format(time.RFC3339)),
			"the next git norma loop reopens it")
	}
}

// resumeFromRemote, landing through a remote, makes the task branch continue from the
// remote's copy: a task another worker started resumes from its last pushed step. A local
// copy that diverged is kept under refs/norma/kept/.
func (r *run) resumeFromRemote(ctx context.Context) error {
	remote := r.app.Config.Remote
	if remote == "" {
		return nil
	}
	var kept string
	err := r.app.Repo.withWorktreeLock(ctx, func() (err error) {
		kept, err = r.wm.Remote(remote).FetchTaskBranch(ctx, r.pre.task.ID, r.id)
		return err
	})
	if err != nil {
		return err
	}
	if kept != "" {
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "branch_kept",
			Message: fmt.Sprintf("%s went its own way from %s's; this clone's is kept as %s, the run goes on from the remote's", worktree.TaskBranch(r.pre.task.ID), remote, kept)})
	}
	return nil
}

// pushStep sends a step commit to the remote, with a lease on the copy this clone pushed
// last: when the worker dies, the next one resumes from its last step; when another worker
// took the task over and pushed, nothing of theirs is overwritten, and this run's landing is
// refused. But the claim decides, not who pushed first: when the worker that pushed in
// between no longer holds it and this run does, this run pushes over it.
func (r *run) pushStep(ctx context.Context, commit string) {
	remote := r.app.Repo.Worktrees(ctx).Remote(r.app.Config.Remote)
	taskID := r.pre.task.ID
	err := remote.PushTaskBranch(ctx, taskID, commit)
	if errors.Is(err, worktree.ErrBranchTaken) && r.app.lander().holdsClaim(ctx, r.st, r.id, taskID) {
		// Pushed by a worker that lost the claim to this run: the claim decides.
		if err = r.app.lander().takeBackBranch(ctx, r.st, r.id, taskID, err, claimDecides(taskID)); err == nil {
			err = remote.PushTaskBranch(ctx, taskID, commit)
		}
	}
	switch {
	case errors.Is(err, worktree.ErrBranchTaken):
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "branch_taken",
			Message: fmt.Sprintf("%v: another worker took the task over; this run's work will not land", err)})
	case err != nil:
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "branch_push_failed", Message: err.Error()})
	}
}
