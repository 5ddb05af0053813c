package gitnorma

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// checkTreeDir holds a task's check worktree (worktree/) and its setup's log; only the
// orchestrator moves it, under the task's lock.
func (r *Repo) checkTreeDir(taskID string) string {
	return r.Path("checks", taskID)
}

// checker runs a task's checks, confined and with the Check step's timeout, where nothing but
// the checked tree is (the task's check worktree); it also sets up new worktrees.
type checker struct {
	repo     *Repo
	setup    [][]string
	timeout  time.Duration
	confiner confiner
	crash    *crashpoints
}

func (ld *lander) checker() checker { return checkerOf(ld.repo, ld.cfg, ld.crash) }

func checkerOf(repo *Repo, cfg config.Config, crash *crashpoints) checker {
	return checker{repo: repo, setup: cfg.Worktree.Setup, timeout: time.Duration(cfg.Agents.Check.Timeout),
		confiner: confiner{cfg: cfg.Sandbox, repo: repo}, crash: crash}
}

// checkTree brings the task's check worktree to exactly commit (created and set up on first
// use, or when fresh asks). The caller holds the task's lock.
func (ck checker) checkTree(ctx context.Context, taskID, commit string, fresh bool) (loop.CheckTree, error) {
	dir := ck.repo.checkTreeDir(taskID)
	log := &lazyLog{path: filepath.Join(dir, "setup.txt")}
	defer log.Close()
	// What checks cached under ignored paths is kept only where the kernel keeps agents out
	// of the check worktree; otherwise (unconfined, or allow_write opening the repository)
	// it is made afresh every time.
	c, err := ck.confiner.withoutProbe()
	shielded := err == nil && ck.confiner.shields(c)
	ct, err := ck.repo.Worktrees(ctx).CheckTree(ctx, worktree.CheckTreeOptions{
		TaskID: taskID, Path: filepath.Join(dir, "worktree"), Commit: commit, Setup: ck.worktreeSetup(log),
		Locked: func(fn func() error) error { return ck.repo.withWorktreeLock(ctx, fn) },
		Fresh:  fresh || !shielded,
	})
	if err != nil {
		return loop.CheckTree{}, err
	}
	return loop.CheckTree{Dir: ct.Dir, Tree: ct.Tree, Leftovers: ct.Leftovers, Checkout: ck.repo.Worktrees(ctx).Checkout(ct.Dir, commit)}, nil
}

// verify runs the criteria's checks on commit in the task's check worktree under runCtx
// (confined), logging to log (logRef in the evidence), and confirms in a fresh worktree a
// PASS that may have needed what earlier checks left (loop.VerifyTree). The caller holds the
// task's lock.
func (ck checker) verify(ctx, runCtx context.Context, taskID, commit string, effective []loop.EffectiveCriterion, log *os.File, logRef string) (loop.CheckTree, []loop.Evidence, bool, error) {
	bring := func(fresh bool) (loop.CheckTree, error) { return ck.checkTree(ctx, taskID, commit, fresh) }
	run := func(ctx context.Context, ct loop.CheckTree) ([]loop.Evidence, error) {
		ck.crash.reach("rechecking")
		return loop.RunChecks(ctx, loop.Checks{Dir: ct.Dir, Log: log, LogRef: logRef, Timeout: ck.timeout, Env: processEnv(), Checkout: ct.Checkout}, effective)
	}
	return loop.VerifyTree(runCtx, bring, run)
}

// removeCheckTree removes the task's check worktree (its task landed, or its runs were
// pruned); the caller holds the task's lock. A failure leaves it for the next prune.
func (r *Repo) removeCheckTree(ctx context.Context, taskID string) error {
	dir := r.checkTreeDir(taskID)
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	err := r.withWorktreeLock(ctx, func() error {
		return r.Worktrees(ctx).RemoveCheckTree(ctx, filepath.Join(dir, "worktree"))
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// worktreeSetup is the repository's preparation of a new worktree: .worktreeinclude and the
// config's worktree.setup commands, their output to log.
func (ck checker) worktreeSetup(log *lazyLog) worktree.Setup {
	return worktree.Setup{Root: ck.repo.Root, Commands: ck.setup, Log: log, Confine: ck.confiner.confineSetup}
}

// lazyLog is a log file created on its first write: most worktrees need no setup.
type lazyLog struct {
	path string
	f    *os.File
}

func (l *lazyLog) Write(p []byte) (int, error) {
	if l.f == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			return 0, err
		}
		// Never through a link an agent put there (a run dir's setup.txt, see fingerprint).
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

func (l *lazyLog) Close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
