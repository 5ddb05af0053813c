package gitnorma

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/worktree"
)

// kvForkPoint records, per run, the target commit its task branch was built on.
const kvForkPoint = "fork_point"

// forkPoint is where a run's task branch stood on the target: Base, the target commit it
// contained when the run started; Started, whether the run (re)started the branch from the
// target, so no run before it contributed to the branch.
type forkPoint struct {
	Base    string `json:"base"`
	Started bool   `json:"started"`
	// Target is the branch Base was on.
	Target string `json:"target,omitempty"`
}

// checkForkPoints refuses to land a branch built on target commits the target no longer has.
// Landing merges the branch into the target; when the user amended, reset or rebased the
// target since the branch forked, the merge would bring back, inside the task's squash
// commit, what the user took out — a secret committed by mistake, say. Every run since the
// branch was last (re)started left its fork point; each must still be on the target, unless
// the branch itself was rebuilt without it.
func (ld *lander) checkForkPoints(ctx context.Context, st *store.Store, req landRequest, head string) error {
	runs, err := st.RunsForTask(ctx, req.task.ID, 20)
	if err != nil {
		return err
	}
	checked := map[string]bool{}
	for _, rec := range runs {
		kv, err := st.KV(ctx, rec.ID)
		if err != nil {
			return err
		}
		var fp forkPoint
		if json.Unmarshal(kv[kvForkPoint], &fp) != nil || fp.Base == "" {
			continue // a run from before fork points were recorded, or one that never started
		}
		if !checked[fp.Base] {
			checked[fp.Base] = true
			if err := ld.forkPointOnTarget(ctx, req, fp, head); err != nil {
				return err
			}
		}
		if fp.Started {
			break
		}
	}
	return nil
}

func (ld *lander) forkPointOnTarget(ctx context.Context, req landRequest, fp forkPoint, head string) error {
	base := fp.Base
	onTarget, err := ld.repo.Git.IsAncestor(ctx, base, "refs/heads/"+req.target)
	if err != nil || onTarget {
		return err
	}
	inBranch, err := ld.repo.Git.IsAncestor(ctx, base, head)
	if err != nil || !inBranch {
		return err // the branch was rebuilt without it since
	}
	branch := worktree.TaskBranch(req.task.ID)
	if fp.Target != "" && fp.Target != req.target {
		return &landRefusal{
			reason: fmt.Errorf("%s was built on %s (at %.10s), which %s does not contain: landing it on %s would bring %s's commits along", branch, fp.Target, base, req.target, req.target, fp.Target),
			hint: fmt.Sprintf("land it on %s (set \"target_branch\" in .norma/config.json, or check %s out), or rebuild it on %s (git rebase --onto %s %.10s %s) and run the task again",
				fp.Target, fp.Target, req.target, req.target, base, branch),
		}
	}
	return &landRefusal{
		reason: fmt.Errorf("%s no longer contains %.10s, which %s was built on: it was amended, reset or rebased since, and landing would bring back what was taken out of it", req.target, base, branch),
		hint: fmt.Sprintf("rebuild the task branch on %s (git rebase --onto %s %.10s %s) and run the task again, or delete it to start over (git branch -D %s)",
			req.target, req.target, base, branch, branch),
	}
}
