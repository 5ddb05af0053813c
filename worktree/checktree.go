package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// checkLockReason is the lock reason of a task's check worktree (see CheckTree).
const checkLockReason = "git-norma checks of "

// LockedForChecks says git-norma locked the worktree as a task's check worktree.
func (i Info) LockedForChecks() bool { return strings.HasPrefix(i.Locked, checkLockReason) }

// CheckedOut is a check worktree brought to one commit.
type CheckedOut struct {
	// Dir is the worktree, holding exactly the commit's tree plus what earlier check commands
	// left there under ignored paths (their caches: node_modules/, target/, .venv/).
	Dir string
	// Tree is the commit's tree id: what the checks run there verify.
	Tree string
	// Created says the worktree was made (and set up) by this call.
	Created bool
	// Leftovers says ignored files were there when it moved: made by earlier checks and setup,
	// which ran earlier commits' code. A PASS is then confirmed afresh (loop.VerifyTree).
	Leftovers bool
}

// CheckTreeOptions say which task's check worktree to bring where.
type CheckTreeOptions struct {
	TaskID string
	// Path is the worktree (.norma/checks/<task>/worktree).
	Path   string
	Commit string
	// Setup prepares the worktree when it is created.
	Setup Setup
	// Locked runs fn under the lock that serialises adding and removing worktrees.
	Locked func(fn func() error) error
	// Fresh makes the worktree again (and sets it up again) instead of moving it: when agents
	// run unconfined, one could have written an ignored file into it, which a move keeps.
	Fresh bool
}

// CheckTree brings the task's check worktree to exactly opts.Commit: checks run there, never
// where an agent works, so no file the agent wrote (ignored, excluded, nested) decides a
// verdict. Created detached and locked on first use; then forced to the commit with what is
// untracked and not ignored removed (the checks' ignored caches stay: Leftovers), or made
// afresh when opts.Fresh asks (an unconfined agent could have written there, or a PASS is
// confirmed without the caches). The caller holds the task's lock.
func (m *Manager) CheckTree(ctx context.Context, o CheckTreeOptions) (CheckedOut, error) {
	out := CheckedOut{Dir: o.Path}
	locked := o.Locked
	if locked == nil {
		locked = func(fn func() error) error { return fn() }
	}
	// The tree id is a fact of the commit: asked while the worktree moves, not after.
	tree := inBackground(func() (err error) {
		out.Tree, err = m.Git.CommitTree(ctx, o.Commit)
		return err
	})
	moved := false
	// Moved only while its .git still links to its git directory: a check could have made it
	// a repository of its own, which later checks' git (Go's VCS stamping, git diff) would read
	// instead, and which git status never reports.
	if admin, err := m.AdminDir(ctx, o.Path); err == nil && exists(o.Path) && !o.Fresh && pointsTo(filepath.Join(o.Path, ".git"), admin) {
		// Tracked files forced to the commit's; what is untracked and not ignored removed,
		// nested repositories included.
		g := m.treeGit(o.Path, admin)
		if g.Run(ctx, "checkout", "-q", "--detach", "--force", o.Commit) == nil {
			var err error
			out.Leftovers, err = clearUntracked(ctx, g, o.Path)
			moved = err == nil
		}
	}
	err := ctx.Err()
	if err == nil && !moved {
		// Missing or broken (its git directory pruned, its .git file gone, an index.lock a
		// killed git left): nothing in it is anyone's work, so it is made again from scratch.
		if err = locked(func() error { return m.addCheckTree(ctx, o) }); err == nil {
			if err = m.SetUp(ctx, o.Path, o.Setup); err != nil {
				// Removed, so that the next check sets it up again instead of using it half made.
				_ = locked(func() error { return m.RemoveCheckTree(context.WithoutCancel(ctx), o.Path) })
			}
		}
		out.Created = err == nil
	}
	// Waited for before out is read (out.Tree is the goroutine's); the first error wins.
	if treeErr := <-tree; err == nil {
		err = treeErr
	}
	return out, err
}

// Checkout is commit checked out in git-norma's check or scratch worktree at dir (see
// loop.Checkout).
func (m *Manager) Checkout(dir, commit string) Checkout {
	return Checkout{m: m, dir: dir, commit: commit}
}

// Checkout is a commit checked out in a worktree of git-norma's, whose check commands may
// change it.
type Checkout struct {
	m           *Manager
	dir, commit string
}

// Changes lists the tracked files that differ from the commit, and HEAD when the worktree's
// HEAD moved off it: one git status, which brings the index's stat data up to date (hashing
// files through the user's clean filters: git-norma's confined git).
func (c Checkout) Changes(ctx context.Context) ([]string, error) {
	g, err := c.git(ctx)
	if err != nil {
		return nil, err
	}
	out, err := g.Output(ctx, "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=no", "--no-renames")
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, e := range strings.Split(out, "\x00") {
		// "1 XY sub mH mI mW hH hI path"; an unmerged "u" entry has three stages' fields.
		f := strings.SplitN(e, " ", 11)
		switch {
		case strings.HasPrefix(e, "# branch.oid ") && f[2] != c.commit:
			changed = append(changed, "HEAD")
		case f[0] == "1" && len(f) >= 9 && !(f[3] == f[4] && f[4] == f[5] && f[6] == f[7] && sameBytes(ctx, g, c.dir, strings.Join(f[8:], " "), f[6])):
			// Forgiven only when the index and the mode as git reads it (mW) are the
			// commit's too: a script made executable, or no longer, is a change.
			changed = append(changed, strings.Join(f[8:], " "))
		case f[0] == "u" && len(f) == 11:
			changed = append(changed, f[10])
		}
	}
	return changed, nil
}

// sameBytes says the file at path (in dir) holds exactly the blob committed: git compares what
// its filters make of a file, and one committed with line endings .gitattributes now converts
// reads as changed once its time changes, though its bytes are still the commit's.
func sameBytes(ctx context.Context, g git.Runner, dir, path, committed string) bool {
	// Regular files only: a pipe a check left there would hold hash-object for ever.
	if st, err := os.Lstat(filepath.Join(dir, path)); err != nil || !st.Mode().IsRegular() {
		return false
	}
	id, err := g.Output(ctx, "hash-object", "--no-filters", "--", path)
	return err == nil && id == committed
}

// Restore puts the tree, the index and HEAD back as the commit has them.
func (c Checkout) Restore(ctx context.Context) error {
	g, err := c.git(ctx)
	if err != nil {
		return err
	}
	if err := g.Run(ctx, "update-ref", "--no-deref", "HEAD", c.commit); err != nil {
		return err
	}
	return g.Run(ctx, "read-tree", "--reset", "-u", c.commit)
}

// git runs git-norma's git in the worktree, confined where the user's filter drivers run.
func (c Checkout) git(ctx context.Context) (git.Runner, error) {
	admin, err := c.m.AdminDir(ctx, c.dir)
	if err != nil {
		return git.Runner{}, err
	}
	return c.m.treeGit(c.dir, admin), nil
}

// clearUntracked removes what is untracked and not ignored in dir as `git clean -ffd` would
// (nested repositories too), empties submodules' directories (a checkout has them empty, and
// status sees nothing in them), and says whether ignored files are left.
func clearUntracked(ctx context.Context, g git.Runner, dir string) (leftovers bool, err error) {
	if err := emptyGitlinks(ctx, g, dir); err != nil {
		return false, err
	}
	out, warnings, err := g.OutputAndStderr(ctx, "status", "--porcelain", "-z", "--ignored", "--untracked-files=normal", "--no-renames")
	if err != nil {
		return false, err
	}
	// A directory git cannot read (a check took its modes away: Landlock does not govern
	// chmod) is neither listed nor cleared, yet what is in it can still be opened by name.
	if strings.Contains(warnings, "could not open directory") {
		return false, fmt.Errorf("%w: %s", errUnreadable, firstLine(warnings))
	}
	for _, entry := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(entry, "!! "):
			leftovers = true
		case strings.HasPrefix(entry, "?? "):
			path := filepath.Join(dir, filepath.FromSlash(entry[len("?? "):]))
			if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
				return false, fmt.Errorf("git status named %q, outside %s", entry[len("?? "):], dir)
			}
			if err := os.RemoveAll(path); err != nil {
				return false, err
			}
		}
	}
	return leftovers, nil
}

// errUnreadable: the check worktree holds a directory git could not read; it is made again.
var errUnreadable = errors.New("a check left a directory git cannot read")

// GiveBackModes gives every directory under dir (never through a link) its owner's read,
// write and search back, so that a removal can look inside: a check, or an agent's tools (a
// module cache, a test's fixture), could have taken them.
func GiveBackModes(dir string) {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return
	}
	if st.Mode().Perm()&0o700 != 0o700 {
		_ = os.Chmod(dir, st.Mode().Perm()|0o700)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			GiveBackModes(filepath.Join(dir, e.Name()))
		}
	}
}

// giveBackReads gives every regular file under dir (never through a link) that its owner may
// not read its owner's read back, and says how many it changed.
func giveBackReads(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o400 == 0 && os.Chmod(path, info.Mode().Perm()|0o400) == nil {
			n++
		}
		return nil
	})
	return n
}

// emptyGitlinks empties the directory of every submodule (gitlink) of the worktree dir's index.
func emptyGitlinks(ctx context.Context, g git.Runner, dir string) error {
	out, err := g.Output(ctx, "ls-files", "-z", "--stage")
	if err != nil {
		return err
	}
	for _, entry := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok || !strings.HasPrefix(meta, "160000 ") {
			continue
		}
		sub := filepath.Join(dir, filepath.FromSlash(path))
		if !strings.HasPrefix(sub, dir+string(filepath.Separator)) {
			return fmt.Errorf("git ls-files named %q, outside %s", path, dir)
		}
		// A check could have made a parent a symlink (a/ → your checkout, for a gitlink a/src):
		// emptying would go through it. Such a worktree is made again instead.
		if !realDirs(dir, path) {
			return fmt.Errorf("%w: %s is not a directory of the worktree's own all the way down", errUnreadable, path)
		}
		GiveBackModes(sub)
		entries, err := os.ReadDir(sub)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("%w: %v", errUnreadable, err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(sub, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) addCheckTree(ctx context.Context, o CheckTreeOptions) error {
	if err := m.RemoveCheckTree(ctx, o.Path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return err
	}
	err := m.addDetached(ctx, o.Path, o.Commit, "--lock", "--reason", checkLockReason+o.TaskID)
	if err != nil {
		return fmt.Errorf("create the check worktree of %s: %w", o.TaskID, err)
	}
	return nil
}

// RemoveCheckTree removes a task's check worktree and everything in it (the checks' outputs
// and caches; nothing there is anyone's work), whatever state it is in. A missing one is fine.
func (m *Manager) RemoveCheckTree(ctx context.Context, path string) error {
	GiveBackModes(path)
	admin, err := m.AdminDir(ctx, path)
	if err == nil {
		// Twice forced: once for what the checks left, once for the lock. Should git still
		// refuse (a stale index.lock), the directory goes below and its git directory after.
		_ = m.Git.Run(ctx, "worktree", "remove", "--force", "--force", path)
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove the check worktree %s: %w", path, err)
	}
	return m.forget(ctx, admin)
}

// AddScratch checks commit out, detached, in a new worktree at path: somewhere to run checks on
// a tree no branch points at yet (a merge about to land). RemoveScratch throws it away.
func (m *Manager) AddScratch(ctx context.Context, path, commit string) error {
	if err := m.addDetached(ctx, path, commit); err != nil {
		return fmt.Errorf("check out %.10s in %s: %w", commit, path, err)
	}
	return nil
}

// addDetached adds a worktree at path with commit detached; opts go to git worktree add. The
// commit is an agent's: checked out by git-norma's git, which runs no post-checkout hook, and
// confined where the agent's .gitattributes steers the user's filter drivers.
func (m *Manager) addDetached(ctx context.Context, path, commit string, opts ...string) error {
	args := append([]string{"worktree", "add", "-q", "--detach", "--no-checkout"}, opts...)
	if err := m.Git.Run(ctx, append(args, path, commit)...); err != nil {
		return err
	}
	admin, err := m.AdminDir(ctx, path)
	if err != nil {
		return err
	}
	return m.treeGit(path, admin).Run(ctx, "read-tree", "--reset", "-u", "HEAD")
}

// RemoveScratch removes a scratch worktree and all its checks left: nothing there is anyone's.
func (m *Manager) RemoveScratch(ctx context.Context, path string) error {
	GiveBackModes(path)
	if err := m.Git.Run(ctx, "worktree", "remove", "--force", path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}

// ClearScratch removes what a scratch worktree at path left when its process died before
// RemoveScratch (its directory, git's record of it), and reports whether there was any.
func (m *Manager) ClearScratch(ctx context.Context, path string) (bool, error) {
	if !exists(path) {
		// Its directory gone, git may still know it (and refuse to add it again).
		if admin, err := m.AdminDir(ctx, path); err == nil && runsDir(m.RunsDir).vanished(admin) {
			return true, m.forget(ctx, admin)
		}
		return false, nil
	}
	GiveBackModes(path)
	if m.Git.Run(ctx, "worktree", "remove", "--force", path) == nil {
		return true, nil
	}
	// Not (or no longer) a worktree git knows: a directory, and maybe a stale record of it.
	admin, _ := m.AdminDir(ctx, path)
	if err := os.RemoveAll(path); err != nil {
		return false, fmt.Errorf("remove leftover %s: %w", path, err)
	}
	return true, m.forget(ctx, admin)
}
