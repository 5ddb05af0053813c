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

// InternalEnv marks git processes started by git-norma itself, so git-norma's hooks can tell
// the loop's own commits and merges from a human's and not re-trigger.
const InternalEnv = "GIT_NORMA_INTERNAL=1"

// TaskBranch is the branch that holds a task's durable state across runs.
func TaskBranch(taskID string) string { return BranchPrefix + taskID }

// Manager creates, finds and removes run worktrees of one repository.
type Manager struct {
	// Git runs in the main worktree's root.
	Git git.Runner
	// CommonDir is the repository's common git directory, where the worktrees' own git
	// directories are found (asked of git when empty).
	CommonDir string
	// RunsDir holds the runs' directories (.norma/runs), where each run worktree's own git
	// directory names the git directory its agents may write (see agentGitDirs).
	RunsDir string
	// RemoteTimeout bounds each fetch, ls-remote and push (0: DefaultRemoteTimeout): a remote
	// that stops answering must not hold a worker for ever.
	RemoteTimeout time.Duration
	// TreeGit, when set, confines git-norma's git commands on a work tree that agents or
	// checks wrote (tree, whose git directory is gitDir) where they may run the user's filter
	// drivers (git.Runner.Confine). Nil: they run unconfined, as all of git-norma's git does.
	TreeGit func(tree, gitDir string) git.Wrap
	// CheckoutGit, when set, confines the landing's fast-forward of a checked-out target, which
	// runs the user's filter drivers on the landed tree (nil: unconfined).
	CheckoutGit git.Wrap
}

// treeGit is the runner of git-norma's git commands in the work tree tree, an agent's or a
// check's, whose git directory is gitDir.
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
	// CatchUp brings an existing task branch up to date with the target first. (A run that
	// would resume from the task's recorded state then finds the head changed when the target
	// moved, and starts its iteration over: what it resumed was checked on another base.)
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

// Create makes the run's worktree on the task branch, creating the branch from the target
// when it does not exist yet and reusing it (with all earlier runs' commits) when it does.
// The caller must have released any worktree still holding the branch (see Holder).
func (m *Manager) Create(ctx context.Context, o CreateOptions) (*Workspace, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	branch := TaskBranch(o.TaskID)
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, err
	}
	// Forget worktrees whose directories were deleted, or git would still count the branch as
	// checked out there.
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
	// Locked, so that no `git worktree prune` — another run's, the user's — drops its git
	// directory while the run needs it (say its .git file went missing: the run must still
	// save what is in it). Remove unlocks it.
	// Checked out below by git-norma's own git, which runs no hook: git worktree add would
	// run the user's post-checkout hook in a tree of the agent's making (a hook that runs a
	// script of the project's would run the agent's, unconfined).
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

// open is the workspace of the run worktree at path, git-norma's git commands there pinned to
// git-norma's own git directory for it (see owngit.go), made afresh when fresh says git has
// just made the worktree.
func (m *Manager) open(ctx context.Context, path, runID string, fresh bool) (*Workspace, error) {
	run := m.runDir(path)
	if run == "" {
		return nil, fmt.Errorf("%s is not a run worktree (%s/<run>/%s): %w", path, m.RunsDir, runWorkspaceName, ErrNotWorktree)
	}
	if m.RunsDir != "" {
		// The run's own spelling of its worktree and run, never the caller's: a path from git's
		// worktree list is an agent's to write (a link inside its workspace, say), and the git
		// directory beside it would be the agent's making.
		path, runID = filepath.Join(run, runWorkspaceName), filepath.Base(run)
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return nil, err
	}
	var admin string
	if fresh {
		admin, err = adminOfNew(common, path)
	} else {
		admin, err = m.AdminDir(ctx, path)
	}
	if err != nil {
		return nil, err
	}
	own, err := makeOwnGitDir(path, admin, common, fresh)
	if err != nil {
		return nil, err
	}
	g := m.treeGit(path, own)
	g.Env = append(g.Env, "GIT_COMMON_DIR="+common)
	rec, _ := readRecord(filepath.Dir(own))
	ws := &Workspace{dir: path, gitDir: admin, ownDir: own, rec: rec, common: common, runID: runID, git: g}
	if branch, _, ok := git.ReadHeadAt(own); ok {
		ws.branch = strings.TrimPrefix(branch, "refs/heads/")
	}
	// The agent's git reads these: Workspace.relinkCommon sets its commondir and
	// config.worktree back as they are now, before any agent ran.
	ws.worktreeConfig, _ = os.ReadFile(filepath.Join(admin, "config.worktree"))
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
		// A prunable entry whose directory is gone has nothing checked out any more. One whose
		// .git file alone is gone still holds an index and files: git worktree prune would
		// throw its index away, so it is its holder's to remove (see Remove).
		// A run worktree whose directory is gone only stays known through its lock; Create
		// forgets it (see ForgetVanished).
		if wt.Branch != branch || !exists(wt.Path) && (wt.Prunable || wt.LockedByRun()) {
			continue
		}
		// git's list says what each worktree's git directory says, and a run worktree's is its
		// agent's to write: a run worktree holds the branch its own git directory (git-norma's)
		// is on, and anything else only what git directories no agent writes say.
		if run := m.runDir(wt.Path); run != "" && m.RunsDir != "" {
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
			// The list's lock and path are what a git directory says, an agent's too: the git
			// directory found for that path must itself be locked by git-norma, or it is not
			// git-norma's to forget (a locked worktree of yours, on a drive not mounted now).
			if admin, err := m.AdminDir(ctx, wt.Path); err == nil && lockedByNorma(admin) && m.vanished(admin) {
				if err := m.forget(ctx, admin); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Removed is what removing a run worktree had to clear first.
type Removed struct {
	// StaleLock is the index.lock a dead process had left there, removed ("" when none).
	StaleLock string
}

// Remove removes a run worktree whose run has ended. Nothing runs git there any more, so an
// index.lock left there is stale: it goes first. Uncommitted changes are committed to the
// branch before the worktree goes (never thrown away: they may be an interrupted agent's
// work). A directory git no longer knows as a worktree is left as it is (ErrNotWorktree):
// without its git directory, git there would find another repository.
func (m *Manager) Remove(ctx context.Context, path, runID, taskID string) (Removed, error) {
	var done Removed
	if exists(path) {
		ws, err := m.open(ctx, path, runID, false)
		if err != nil {
			return done, fmt.Errorf("save uncommitted changes in %s before removing it: %w", path, err)
		}
		// The branch the run worked on, from the caller (the store): what is uncommitted is
		// saved there, or nowhere.
		ws.branch = TaskBranch(taskID)
		if done.StaleLock, err = ws.RemoveStaleLock(); err != nil {
			return done, err
		}
		if err := ws.rescue(ctx); err != nil {
			return done, fmt.Errorf("save uncommitted changes in %s before removing it: %w", path, err)
		}
		// Its HEAD back on its branch first: should the worktree stay (git refusing to remove
		// it), an agent's HEAD on another task's branch would keep that task from running.
		_ = ws.syncAgentView()
		if err := relink(path, ws.gitDir); err != nil {
			return done, fmt.Errorf("remove worktree %s: %w", path, err)
		}
		// Twice forced: once for the files just saved, once for the run's lock (see Create).
		if err := m.Git.Run(ctx, "worktree", "remove", "--force", "--force", path); err != nil {
			return done, fmt.Errorf("remove worktree %s: %w", path, err)
		}
		// Its record goes with it: a later run's git directory may get its name, even its inode.
		_ = os.Remove(filepath.Join(ws.ownDir, recordFile))
	} else if admin, err := m.AdminDir(ctx, path); err == nil {
		// Its directory is gone; only its lock keeps git from forgetting it.
		return done, m.forget(ctx, admin)
	}
	return done, nil
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
