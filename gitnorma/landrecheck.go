package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// recheckOnTarget makes sure what lands is what was verified. The branch must still be at the
// head its PASS was recorded for. When the target moved on since the branch forked, a clean
// merge is no proof (a renamed function and a new call to its old name merge cleanly), so the
// task's checks run again on the merged tree: on PASS the merge becomes the branch's head and
// lands, on FAIL the landing is refused (the task's next run starts from the merge). It
// returns the verified commit to land and the target tip it was verified on: the landing must
// be built on exactly that tip (LandOptions.Base), as another git-norma of this clone may
// move the target meanwhile.
func (ld *lander) recheckOnTarget(ctx context.Context, st *store.Store, req landRequest) (head, tip string, err error) {
	branch := worktree.TaskBranch(req.task.ID)
	heads, err := ld.repo.Git.ResolveAll(ctx, "refs/heads/"+branch, "refs/heads/"+req.target)
	if err != nil || len(heads) != 2 {
		return "", "", fmt.Errorf("read %s and %s: %v", branch, req.target, err)
	}
	head, tip = heads[0], heads[1]
	run, err := st.Run(ctx, req.runID)
	if err != nil {
		return "", "", err
	}
	passHead := run.PassHead
	switch {
	case passHead == "":
		return "", "", &landRefusal{reason: fmt.Errorf("run %s recorded no verified commit of %s: only verified work lands", req.runID, branch),
			hint: "verify it again: git norma run " + req.task.ID}
	case passHead != head:
		return "", "", &landRefusal{reason: fmt.Errorf("%s moved since its PASS (recorded on %.10s, now at %.10s): only verified work lands", branch, passHead, head),
			hint: "verify it again: git norma run " + req.task.ID}
	}
	if cmd, err := ld.uncheckedVerify(ctx, st, req); err != nil {
		return "", "", err
	} else if cmd != "" {
		return "", "", &landRefusal{reason: fmt.Errorf("the task's Verify changed since run %s passed: `%s` was never checked; only verified work lands", req.runID, cmd),
			hint: "verify it again: git norma run " + req.task.ID}
	}
	if paths, err := ld.repo.Worktrees(ctx).ControlChanges(ctx, tip, head); err != nil {
		return "", "", err
	} else if len(paths) > 0 {
		return "", "", &landRefusal{reason: fmt.Errorf("%s changes git-norma's config, the backlog or the hooks (%s): only the user changes them", branch, strings.Join(paths, ", ")),
			paths: paths, hint: fmt.Sprintf("look at what changed them: git log -p %s..%s; if you made those changes, land the branch yourself", req.target, branch)}
	}
	if err := ld.checkForkPoints(ctx, st, req, head); err != nil {
		return "", "", err
	}
	if onBranch, err := ld.repo.Git.IsAncestor(ctx, tip, head); err == nil && onBranch {
		// The target is where the branch was verified: what lands is head's tree, and the
		// PASS's evidence must name exactly that tree.
		if err := ld.checkPassTree(ctx, req, run.PassTree, head); err != nil || req.checkedHere {
			return head, tip, err
		}
		// A PASS read from a store an agent could have written (trust.go) is a hint: the tree
		// that would land is checked again.
		distrust := storeDistrust(ctx, st, ld.shieldedNow())
		if distrust == "" {
			return head, tip, nil
		}
		_, err := ld.recheck(ctx, st, req, head, fmt.Sprintf("the PASS of run %s was read from the run store, and %s; its checks on %.10s", req.runID, distrust, head),
			map[string]any{"head": head}, func(failed, logPath string) *landRefusal {
				return &landRefusal{reason: fmt.Errorf("its checks fail on the tree that would land: %s (log: %s)", failed, logPath),
					hint: "verify it again: git norma run " + req.task.ID}
			})
		return head, tip, err
	}
	wm := ld.repo.Worktrees(ctx)
	merge, err := wm.MergeCommit(ctx, tip, head, fmt.Sprintf("norma: merge %s into %s to check before landing\n\nNorma-Run: %s\n", req.target, branch, req.runID))
	if errors.Is(err, worktree.ErrConflict) {
		return head, tip, nil // landing refuses it, naming the paths
	} else if err != nil {
		return "", "", err // never land a merge that was not checked
	}
	tree, err := ld.recheck(ctx, st, req, merge, fmt.Sprintf("%s moved to %.10s since the branch forked; its checks on the merge %.10s", req.target, tip, merge),
		map[string]any{"target_tip": tip, "merge": merge}, func(failed, logPath string) *landRefusal {
			return &landRefusal{reason: fmt.Errorf("its checks fail once merged with what landed on %s since it forked: %s (log: %s)", req.target, failed, logPath),
				hint: fmt.Sprintf("run it again, from %s merged in: git norma run %s", req.target, req.task.ID)}
		})
	if err != nil || tree == "" {
		return head, tip, err // no criteria: nothing to check again
	}
	if err := ld.repo.Git.UpdateRef(ctx, "refs/heads/"+branch, merge, head, "norma: merge "+req.target+" checked before landing"); err != nil {
		return "", "", fmt.Errorf("move %s to the checked merge: %w", branch, err)
	}
	return merge, tip, st.RecordPass(ctx, req.runID, merge, tree)
}

// recheck runs the task's criteria on commit in its check worktree and records land_rechecked;
// it returns the checked tree ("" with no criteria to run), or, unless PASS, the refusal
// refuse builds from the failing commands and the log.
func (ld *lander) recheck(ctx context.Context, st *store.Store, req landRequest, commit, why string, data map[string]any, refuse func(failed, logPath string) *landRefusal) (string, error) {
	effective, err := ld.landCriteria(ctx, st, req)
	if err != nil || len(effective) == 0 {
		return "", err
	}
	var evidence []loop.Evidence
	var tree, logPath string
	checks := func() (err error) {
		evidence, tree, logPath, err = ld.checker().checksInCheckTree(ctx, ld.repo.Path("runs", req.runID, "recheck"), req.task.ID, commit, effective)
		return err
	}
	if ld.shieldedNow() {
		err = checks()
	} else {
		err = ld.guardedChecks(ctx, st, guardedRun{runID: req.runID, taskID: req.task.ID, target: req.target, logDir: "recheck", holdsLanding: true}, checks,
			"the checks run before landing "+req.task.ID, "nothing landed")
	}
	if err != nil {
		return "", err
	}
	verdict := loop.ComputeVerdict(effective, loop.ResultsFromEvidence(effective, evidence), loop.PlanMatch{}).Status
	var failed []string
	for _, e := range evidence {
		if !e.Passed {
			failed = append(failed, fmt.Sprintf("`%s` exited %d", e.Cmd, e.ExitCode))
		}
	}
	data["tree"], data["verdict"], data["evidence"], data["log"] = tree, verdict, evidence, logPath
	_ = st.AppendEvent(ctx, req.runID, store.Event{TS: ld.now(), Type: "land_rechecked", Message: why + ": " + verdict, Data: data})
	if verdict != loop.VerdictPass {
		return "", refuse(strings.Join(failed, "; "), logPath)
	}
	return tree, nil
}

// guardedRun is whose code checks run unconfined outside a step: the run and its task, the
// target, the directory of the run dir their log goes to, and whether the caller holds the
// landing lock already.
type guardedRun struct {
	runID, taskID, target, logDir string
	holdsLanding                  bool
	// runDir is the directory watched as the run dir (default: the run's).
	runDir string
}

// guardedChecks runs checks, whose commands run the agent's code unconfined, under the
// fallback guard, as a Check step's are: what they changed of the user's refs, config, hooks,
// checkout, backlog or store is reported, set back where it can be, recorded as the run's
// violation (no run starts until the user has seen it), and is the error (what names the
// checks, done says what became of the work).
func (ld *lander) guardedChecks(ctx context.Context, st *store.Store, r guardedRun, checks func() error, what, done string) error {
	if err := markUnshielded(ctx, st, ld.now(), what+" with its commands unconfined"); err != nil {
		return err
	}
	g := &guard.Guard{Places: ld.repo.guarded(), Now: ld.now, Store: st, RunID: r.runID, TaskID: r.taskID, Target: r.target,
		JSONLBacklog: ld.kind() == "jsonl", LiveTasks: ld.repo.liveTasks, HoldsLanding: r.holdsLanding,
		KeepDir: ld.repo.Path("runs", r.runID)}
	// The backlog and the run dir are watched as around a step (workspace.OutsideChanges): a
	// check command could rewrite another task's Verify line, or file a task no one reviews.
	w := workspace{root: ld.repo.Root, runDir: cmp.Or(r.runDir, ld.repo.Path("runs", r.runID)), guard: g}
	if err := os.MkdirAll(filepath.Join(w.runDir, r.logDir), 0o700); err != nil { // the checks' log: git-norma's own
		return err
	}
	snap, err := w.snapshotOutside(ctx)
	if err != nil {
		return err
	}
	err = checks()
	found, cerr := w.OutsideChanges(context.WithoutCancel(ctx), snap) // records the violation; looks after Ctrl-C too
	if cerr != nil {
		return cerr
	}
	if len(found) > 0 {
		return &Error{Kind: ErrStopped, Err: fmt.Errorf("%s wrote outside the places they may write: %s", what, strings.Join(found, ", ")),
			Hint: done + "; look at what its code does (git norma status " + r.runID + "), then clear it: git norma resume"}
	}
	return err
}

// shieldedNow says the kernel keeps agents and check commands started now out of the store.
func (ld *lander) shieldedNow() bool { return ld.checker().confiner.shieldsNow() }

// checkPassTree refuses to land head unless the run's PASS names head's tree, the one its
// check commands ran on. A PASS without one was not made by a Check step of this git-norma
// (a resumed step, a record made some other way).
func (ld *lander) checkPassTree(ctx context.Context, req landRequest, checked, head string) error {
	tree, err := ld.repo.Git.CommitTree(ctx, head)
	if err != nil {
		return err
	}
	hint := "verify it again, on exactly this tree: git norma run " + req.task.ID
	switch {
	case checked == "":
		return &landRefusal{reason: fmt.Errorf("the PASS of run %s names no checked tree, and %.10s has tree %.10s: only the tree a Check step ran its commands on lands", req.runID, head, tree), hint: hint}
	case checked != tree:
		return &landRefusal{reason: fmt.Errorf("the PASS of run %s was checked on tree %.10s, but %.10s, which would land, has tree %.10s: only the tree a Check step ran its commands on lands", req.runID, checked, head, tree), hint: hint}
	}
	return nil
}

// checkForkPoints refuses to land a branch built on target commits the target no longer has:
// when the user amended, reset or rebased the target since, the merge would bring back, in
// the squash commit, what the user took out (a secret committed by mistake, say). The fork
// point of every run since the branch was last (re)started must still be on the target,
// unless the branch was rebuilt without it.
func (ld *lander) checkForkPoints(ctx context.Context, st *store.Store, req landRequest, head string) error {
	// Every run back to the one that (re)started the branch, however many came since (checks
	// of the task count as runs too): an index lookup.
	runs, err := st.RunsForTask(ctx, req.task.ID, 0)
	if err != nil {
		return err
	}
	checked := map[string]bool{}
	for _, rec := range runs {
		fp := rec.Fork
		if fp.Base == "" {
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

func (ld *lander) forkPointOnTarget(ctx context.Context, req landRequest, fp store.ForkPoint, head string) error {
	base := fp.Base
	onTarget, err := ld.repo.Git.IsAncestor(ctx, base, "refs/heads/"+req.target)
	if err != nil && !ld.repo.Git.HasCommit(ctx, base) && ld.repo.Git.HasCommit(ctx, head) {
		// Purged since (reflog expire, gc: a leaked secret): no branch holds a commit git no
		// longer has, and a landing cannot bring it back.
		return nil
	}
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

// landCriteria are the criteria the run's last plan checked, or without one (a `git norma
// check`) the task's Verify commands and the gates.
func (ld *lander) landCriteria(ctx context.Context, st *store.Store, req landRequest) ([]loop.EffectiveCriterion, error) {
	if why := storeDistrust(ctx, st, ld.shieldedNow()); !req.checkedHere && why != "" {
		// The stored plan is as forgeable as the PASS (see recheckOnTarget): the task's own
		// Verify commands and the gates decide, and without any nothing vouches for the tree.
		effective := taskCriteria(ld.cfg.Gates, req.task)
		if len(effective) == 0 {
			return nil, &landRefusal{reason: fmt.Errorf("the PASS of run %s was read from the run store, and %s; the task has no Verify command and there are no gates to check it with again", req.runID, why),
				hint: "give the task a `Verify:` line in its description, then run it again: git norma run " + req.task.ID}
		}
		return effective, nil
	}
	if plan, _, _, err := runOutputs(ctx, st, req.runID); err != nil {
		return nil, err
	} else if plan != nil && len(plan.AcceptanceCriteria.Effective) > 0 {
		return plan.AcceptanceCriteria.Effective, nil
	}
	return taskCriteria(ld.cfg.Gates, req.task), nil
}

// uncheckedVerify names a command of the task's Verify, or a gate, that the plan of the run
// whose PASS would land never checked ("" when it checked them all, or has no plan to compare
// with): a person tightened what proves the task done after it passed. A command dropped
// since is no reason to refuse: the PASS checked more than is asked now. With a store agents
// could write, the landing checks the task's own criteria again anyway (landCriteria).
func (ld *lander) uncheckedVerify(ctx context.Context, st *store.Store, req landRequest) (string, error) {
	if !req.checkedHere && storeDistrust(ctx, st, ld.shieldedNow()) != "" {
		return "", nil
	}
	plan, _, _, err := runOutputs(ctx, st, req.runID)
	if err != nil || plan == nil || len(plan.AcceptanceCriteria.Effective) == 0 {
		return "", err
	}
	checked := map[string]bool{}
	for _, c := range plan.AcceptanceCriteria.Effective {
		for _, k := range c.Checks {
			checked[k.Cmd] = true
		}
	}
	for _, c := range taskCriteria(ld.cfg.Gates, req.task) {
		for _, k := range c.Checks {
			if !checked[k.Cmd] {
				return k.Cmd, nil
			}
		}
	}
	return "", nil
}

// checksAt runs the criteria's checks on commit in a scratch worktree, dir/workspace, thrown
// away after, logging to dir/checks.txt, whose path it returns. (A parent's completion checks
// there: it holds no lock of that task.)
func (ck checker) checksAt(ctx context.Context, dir, commit string, effective []loop.EffectiveCriterion) ([]loop.Evidence, string, error) {
	log, logPath, err := openChecksLog(dir)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	scratch := filepath.Join(dir, "workspace")
	wm := ck.repo.Worktrees(ctx)
	// One left by a killed re-check holds nothing of value, and git would refuse to add it.
	err = ck.repo.withWorktreeLock(ctx, func() error {
		if _, err := wm.ClearScratch(ctx, scratch); err != nil {
			return err
		}
		return wm.AddScratch(ctx, scratch, commit)
	})
	if err != nil {
		return nil, "", err
	}
	defer ck.repo.withWorktreeLock(context.WithoutCancel(ctx), func() error { return wm.RemoveScratch(context.WithoutCancel(ctx), scratch) }) //nolint:errcheck // a leftover is pruned later
	cctx, done, err := ck.confiner.confineChecks(ctx, dir, log)
	if err != nil {
		return nil, "", err
	}
	ck.crash.reach("rechecking")
	// An empty cache home of their own: what earlier checks cached there ran code no one
	// verified, and nothing confirms this verdict again.
	evidence, err := loop.RunChecks(loop.FreshCaches(cctx), loop.Checks{Dir: scratch, Log: log, LogRef: "checks.txt", Timeout: ck.timeout, Env: processEnv(), Checkout: wm.Checkout(scratch, commit)}, effective)
	if derr := done(); derr != nil {
		err = derr
	}
	return evidence, logPath, err
}

// checksInCheckTree runs the criteria's checks on commit in the task's check worktree (see
// checker.checkTree), logging to dir/checks.txt. It returns the evidence, the checked tree and
// the log's path. The caller holds the task's lock.
func (ck checker) checksInCheckTree(ctx context.Context, dir, taskID, commit string, effective []loop.EffectiveCriterion) ([]loop.Evidence, string, string, error) {
	log, logPath, err := openChecksLog(dir)
	if err != nil {
		return nil, "", "", err
	}
	defer log.Close()
	cctx, done, err := ck.confiner.confineChecks(ctx, dir, log)
	if err != nil {
		return nil, "", "", err
	}
	ct, evidence, _, err := ck.verify(ctx, cctx, taskID, commit, effective, log, "checks.txt")
	if derr := done(); derr != nil {
		err = derr
	}
	return evidence, ct.Tree, logPath, err
}

// openChecksLog makes dir/checks.txt anew. The checks may write dir (it is their step
// directory): what an earlier check left at that path, a link to a file of the user's, say,
// goes first, and the log must be a new file, never written through.
func openChecksLog(dir string) (*os.File, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	logPath := filepath.Join(dir, "checks.txt")
	log, err := loop.CreateNew(logPath)
	return log, logPath, err
}
