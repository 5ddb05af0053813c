// Package worktree owns the run workspaces: the linked git worktree of each run on its task
// branch, the orchestrator's commits there, and landing a finished task branch on its target
// as one squash commit. It decides nothing about verdicts.
package worktree

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// BranchPrefix is the namespace of task branches: norma/task/<task-id>.
const BranchPrefix = "norma/task/"

// TaskBranch is the branch that holds a task's durable state across runs.
func TaskBranch(taskID string) string { return BranchPrefix + taskID }

// Manager creates, finds and removes run worktrees of one repository.
type Manager struct {
	// Git runs in the main worktree's root.
	Git git.Runner
	// CommonDir is the repository's common git directory (asked of git when empty).
	CommonDir string
	// RunsDir holds the runs' directories (.norma/runs), where git-norma's own git directory
	// of each run worktree records the one its agents may write (agentGitDirs).
	RunsDir string
	// RemoteTimeout bounds each fetch, ls-remote and push (0: DefaultRemoteTimeout): a remote
	// that stops answering must not hold a worker for ever.
	RemoteTimeout time.Duration
	// TreeGit, when set, confines git-norma's git commands that may run the user's filter
	// drivers on a work tree agents or checks wrote (git.Runner.Confine; nil: unconfined).
	TreeGit func(tree, gitDir string) git.Wrap
	// CheckoutGit, when set, confines the landing's fast-forward of a checked-out target (the
	// user's filter drivers run on the landed tree).
	CheckoutGit git.Wrap
}

// treeGit runs git-norma's git in an agent's or a check's work tree, pinned to gitDir.
func (m *Manager) treeGit(tree, gitDir string) git.Runner {
	g := m.Git.Pinned(gitDir, tree)
	if m.TreeGit != nil {
		g.Confine = m.TreeGit(tree, gitDir)
	}
	return g
}

// CreateOptions say which task workspace to create and where.
type CreateOptions struct {
	TaskID string
	RunID  string
	// Path is where the worktree goes (.norma/runs/<run>/workspace).
	Path string
	// Target is the branch the task forks from and lands on.
	Target string
	// CatchUp brings an existing task branch up to date with the target first (a resumed run
	// then finds its head changed, and starts its iteration over on the new base).
	CatchUp bool
}

// ErrInvalidOptions is returned by CreateOptions.Validate.
var ErrInvalidOptions = errors.New("invalid worktree options")

// Validate checks the options are complete and the path is absolute.
func (o CreateOptions) Validate() error {
	if o.TaskID == "" || o.RunID == "" || o.Target == "" {
		return fmt.Errorf("%w: task, run and target are required", ErrInvalidOptions)
	}
	if !filepath.IsAbs(o.Path) {
		return fmt.Errorf("%w: path %q is not absolute", ErrInvalidOptions, o.Path)
	}
	return nil
}

// Create makes the run's worktree on the task branch, made from the target if new, else with
// earlier runs' commits. The caller must have released any worktree holding it (Holder).
func (m *Manager) Create(ctx context.Context, o CreateOptions) (*Workspace, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	branch := TaskBranch(o.TaskID)
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, err
	}
	// Else git would count the branch as checked out in a deleted worktree.
	if err := m.ForgetVanished(ctx); err != nil {
		return nil, err
	}
	exists, err := m.BranchExists(ctx, branch)
	if err != nil {
		return nil, err
	}
	var caught CatchUp
	if exists && o.CatchUp {
		if caught, err = m.catchUp(ctx, o, branch); err != nil {
			return nil, fmt.Errorf("bring %s up to date with %s: %w", branch, o.Target, err)
		}
	}
	// Locked, so that no prune drops its git directory while the run needs it (its .git file
	// gone, what is in it must still be saved); Remove unlocks it. Checked out below by
	// git-norma's git, which runs no hook: git worktree add would run your post-checkout hook
	// in a tree of the agent's making (a project script it runs would be the agent's).
	args := []string{"worktree", "add", "-q", "--lock", "--reason", lockReason + o.RunID, "--no-checkout"}
	if exists {
		args = append(args, o.Path, branch)
	} else {
		args = append(args, "-b", branch, o.Path, "refs/heads/"+o.Target)
	}
	if err := m.Git.Run(ctx, args...); err != nil {
		if caught.Kept != "" {
			return nil, fmt.Errorf("create worktree for run %s: %w (the branch had been restarted from %s; its earlier work is kept as %s)", o.RunID, err, o.Target, caught.Kept)
		}
		return nil, fmt.Errorf("create worktree for run %s: %w", o.RunID, err)
	}
	base, err := m.Git.Output(ctx, "merge-base", "refs/heads/"+o.Target, "refs/heads/"+branch)
	if err != nil {
		return nil, fmt.Errorf("find where %s forks from %s: %w", branch, o.Target, err)
	}
	ws, err := m.open(ctx, o.Path, o.RunID, true)
	if err == nil {
		// Confined where the user's filter drivers may run on an agent's files (TreeGit).
		if err = ws.git.Run(ctx, "read-tree", "--reset", "-u", "HEAD"); err == nil {
			err = ws.syncAgentView()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create worktree for run %s: %w", o.RunID, err)
	}
	ws.branch, ws.taskID, ws.base, ws.CaughtUp = branch, o.TaskID, base, caught
	ws.Started = !exists || caught.Kept != ""
	return ws, nil
}

// open is the workspace of the run worktree at path, its git pinned to git-norma's own git
// directory (owngit.go), made afresh when fresh says git has just made the worktree.
func (m *Manager) open(ctx context.Context, path, runID string, fresh bool) (*Workspace, error) {
	run := runsDir(m.RunsDir).runDir(path)
	if run == "" {
		return nil, fmt.Errorf("%s is not a run worktree (%s/<run>/%s): %w", path, m.RunsDir, runWorkspaceName, ErrNotWorktree)
	}
	if m.RunsDir != "" {
		// The run's own spelling of its worktree, never the caller's: a path from git's list is
		// an agent's to write (a link in its workspace), and the git directory beside it too.
		path, runID = filepath.Join(run, runWorkspaceName), filepath.Base(run)
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return nil, err
	}
	var admin string
	if fresh {
		// From the .git file git just wrote (nothing ran there yet; other runs' agents may
		// have made gitdir files name path): one of the repository's, naming path back.
		var ok bool
		if admin, ok = linkedAdmin(common, path); !ok {
			return nil, fmt.Errorf("%s: %w", path, ErrNotWorktree)
		}
	} else if admin, err = m.AdminDir(ctx, path); err != nil {
		return nil, err
	}
	own, err := makeOwnGitDir(path, admin, common, fresh)
	if err != nil {
		return nil, err
	}
	g := m.treeGit(path, own)
	g.Env = append(g.Env, "GIT_COMMON_DIR="+common)
	rec, _ := readRecord(filepath.Dir(own))
	ws := &Workspace{dir: path, gitDir: admin, ownDir: own, rec: rec, common: common, root: m.Git.Dir, runID: runID, git: g}
	if branch, _, ok := git.ReadHeadAt(own); ok {
		ws.branch = strings.TrimPrefix(branch, "refs/heads/")
	}
	// As before any agent ran, for relinkCommon to set back.
	ws.worktreeConfig, _ = readRegular(filepath.Join(admin, "config.worktree"))
	return ws, nil
}

// BranchExists reports whether refs/heads/<branch> exists.
func (m *Manager) BranchExists(ctx context.Context, branch string) (bool, error) {
	err := m.Git.Run(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	if git.ExitCodeOf(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// Holder returns the path of the worktree that has branch checked out, or "".
func (m *Manager) Holder(ctx context.Context, branch string) (string, error) {
	list, common, agents, err := m.listJudged(ctx)
	if err != nil {
		return "", err
	}
	for i, wt := range list {
		// A prunable entry whose directory is gone holds nothing; one whose .git file alone is
		// gone still holds an index and files, its holder's to remove (a prune would drop the
		// index). A run worktree whose directory is gone stays known by its lock alone.
		if wt.Branch != branch || !exists(wt.Path) && (wt.Prunable || wt.LockedByRun()) {
			continue
		}
		// git's list repeats each git directory, and a run worktree's is its agent's: a run
		// worktree holds the branch git-norma's own git directory for it is on, any other only
		// what git directories no agent writes say.
		if run := runsDir(m.RunsDir).runDir(wt.Path); run != "" && m.RunsDir != "" {
			if held, _, ok := git.ReadHeadAt(filepath.Join(run, ownGitDirName)); ok && held != "refs/heads/"+branch {
				continue
			}
			return filepath.Join(run, runWorkspaceName), nil
		}
		if i == 0 || m.RunsDir == "" || linkedCheckout(common, wt.Path, branch, agents) {
			return wt.Path, nil
		}
	}
	return "", nil
}

// lockReason prefixes the reason a run's worktree is locked with (see Create).
const lockReason = "git-norma run "

// LockedByRun says git-norma locked the worktree for a run (see Create).
func (i Info) LockedByRun() bool { return strings.HasPrefix(i.Locked, lockReason) }

// ForgetVanished makes git forget the worktrees whose directories are gone, run and check
// worktrees (locked) included: nothing is left in them to save, and they would keep their
// branches checked out, so that neither git branch -D nor git switch could have them.
func (m *Manager) ForgetVanished(ctx context.Context) error {
	list, err := m.List(ctx)
	if err != nil {
		return err
	}
	for _, wt := range list {
		if (wt.LockedByRun() || wt.LockedForChecks()) && !exists(wt.Path) {
			// The list's lock and path may be an agent's word: the git directory found for the
			// path must be locked by git-norma, or it is not its to forget (yours, unmounted).
			if admin, err := m.AdminDir(ctx, wt.Path); err == nil && lockedByNorma(admin) && runsDir(m.RunsDir).vanished(admin) {
				if err := m.forget(ctx, admin); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Remove removes a run worktree whose run has ended: a stale index.lock first (no git runs
// there any more), then uncommitted changes committed to the branch (an interrupted agent's
// work). A directory git no longer knows is left (ErrNotWorktree): git there would find
// another repository. It returns the stale locks it removed ("" when none).
func (m *Manager) Remove(ctx context.Context, path, runID, taskID string) (staleLock string, err error) {
	if exists(path) {
		// What the agent's tools made read-only (a module cache, a test's fixture) would keep
		// git from removing the worktree: it would forget it, and leave its files to you. Only
		// in the run's own worktree, spelt as open does: a path from git's list could lead (by
		// .. or a link in a workspace) to your checkout.
		if own := runsDir(m.RunsDir).ownSpelling(path); own != "" {
			GiveBackModes(own)
		}
		ws, err := m.open(ctx, path, runID, false)
		if err != nil {
			return staleLock, fmt.Errorf("save uncommitted changes in %s before removing it: %w", path, err)
		}
		// The caller's (the store's) branch: what is uncommitted is saved there or nowhere.
		ws.branch = TaskBranch(taskID)
		if staleLock, err = ws.RemoveStaleLock(); err != nil {
			return staleLock, err
		}
		err = ws.rescue(ctx)
		if err != nil && giveBackReads(ws.dir) > 0 {
			// A file its owner may not read (a test's fixture): git could not add it. Readable
			// again, it is saved; else no later run of the task could free its branch.
			err = ws.rescue(ctx)
		}
		if err != nil {
			return staleLock, fmt.Errorf("save uncommitted changes in %s before removing it: %w", path, err)
		}
		// HEAD back on its branch: should the worktree stay, an agent's HEAD on another task's
		// branch would keep that task from running.
		_ = ws.syncAgentView()
		if err := relink(path, ws.gitDir); err != nil {
			return staleLock, fmt.Errorf("remove worktree %s: %w", path, err)
		}
		// Twice forced: once for the files just saved, once for the run's lock (see Create).
		if err := m.Git.Run(ctx, "worktree", "remove", "--force", "--force", path); err != nil {
			return staleLock, fmt.Errorf("remove worktree %s: %w", path, err)
		}
		// Its record goes with it: a later run's git directory may get its name, even its inode.
		_ = os.Remove(filepath.Join(ws.ownDir, recordFile))
	} else if admin, err := m.AdminDir(ctx, path); err == nil {
		// Its directory is gone; only its lock keeps git from forgetting it.
		return "", m.forget(ctx, admin)
	}
	return staleLock, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Info is one entry of `git worktree list`.
type Info struct {
	Path string
	Head string
	// Branch is the short branch name, "" when detached.
	Branch   string
	Bare     bool
	Prunable bool
	// Locked is the reason the worktree is locked ("" when it is not).
	Locked string
}

func (i *Info) set(key, val string) {
	switch key {
	case "HEAD":
		i.Head = val
	case "branch":
		i.Branch = strings.TrimPrefix(val, "refs/heads/")
	case "bare":
		i.Bare = true
	case "prunable":
		i.Prunable = true
	case "locked":
		i.Locked = cmp.Or(val, "(no reason)")
	}
}

// List returns every worktree of the repository, the main one first.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	out, err := m.Git.Output(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	var list []Info
	for _, field := range strings.Split(out, "\x00") {
		key, val, _ := strings.Cut(field, " ")
		if key == "worktree" {
			list = append(list, Info{Path: val})
		} else if len(list) > 0 {
			list[len(list)-1].set(key, val)
		}
	}
	return list, nil
}
