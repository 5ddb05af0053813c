package gitnorma

import (
	"context"
	"errors"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/worktree"
)

// resumeFromRemote, landing through a remote, makes the task branch continue from the copy
// the remote has: a task another worker started resumes from its last pushed step (the task's
// state in bd says which steps of the iteration are done). A local copy that diverged from it
// is kept under refs/norma/kept/.
func (r *run) resumeFromRemote(ctx context.Context) error {
	remote := r.app.Config.Remote
	if remote == "" {
		return nil
	}
	var kept string
	err := r.app.Repo.withWorktreeLock(ctx, func() (err error) {
		kept, err = r.wm.FetchTaskBranch(ctx, remote, r.pre.task.ID, r.id)
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

// branchPusher sends a run's step commits to the remote in the background, in order, each
// with a lease on the copy this clone pushed last: when the worker dies, the next one resumes
// from its last step; when another worker took the task over and pushed, nothing of that
// worker's is overwritten, and this run's landing is refused (the landing's push carries the
// same lease). Who pushed first does not decide, though: when the worker that pushed in
// between no longer holds the claim and this run does, this run pushes over it. A nil
// branchPusher (no remote) does nothing.
type branchPusher struct {
	app    *App
	st     *store.Store
	runID  string
	taskID string
	queue  chain
}

func (r *run) branchPusher() *branchPusher {
	if r.app.Config.Remote == "" {
		return nil
	}
	return &branchPusher{app: r.app, st: r.st, runID: r.id, taskID: r.pre.task.ID}
}

func (p *branchPusher) push(ctx context.Context, commit string) {
	if p == nil {
		return
	}
	p.queue.then(func() {
		wm := p.app.Repo.Worktrees()
		err := wm.PushTaskBranch(ctx, p.app.Config.Remote, p.taskID, commit)
		if errors.Is(err, worktree.ErrBranchTaken) && p.app.lander().holdsClaim(ctx, p.st, p.runID, p.taskID) {
			// Pushed by a worker that lost the claim to this run: the claim decides.
			if err = p.app.lander().takeBackBranch(ctx, p.st, p.runID, p.taskID, err); err == nil {
				err = wm.PushTaskBranch(ctx, p.app.Config.Remote, p.taskID, commit)
			}
		}
		switch {
		case errors.Is(err, worktree.ErrBranchTaken):
			_ = p.st.AppendEvent(ctx, p.runID, store.Event{TS: p.app.Now(), Type: "branch_taken",
				Message: fmt.Sprintf("%v: another worker took the task over; this run's work will not land", err)})
		case err != nil:
			_ = p.st.AppendEvent(ctx, p.runID, store.Event{TS: p.app.Now(), Type: "branch_push_failed", Message: err.Error()})
		}
	})
}

func (p *branchPusher) wait() {
	if p != nil {
		p.queue.wait()
	}
}
