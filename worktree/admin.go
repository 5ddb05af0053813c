package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotWorktree is returned for a directory git no longer knows as a linked worktree of the
// repository (its git directory was pruned): git-norma runs no git command there at all.
var ErrNotWorktree = errors.New("git does not know it as a worktree of this repository")

// AdminDir returns the git directory of the linked worktree at path (<common>/worktrees/<name>):
// for a run worktree, the one recorded when git made it; for any other, the one whose gitdir
// file names path/.git, skipping run worktrees' (an agent's naming your worktree would take its
// place). Never from path/.git: what runs there may rewrite or delete it, and git, not finding
// it, would take the main checkout's repository for the worktree's.
func (m *Manager) AdminDir(ctx context.Context, path string) (string, error) {
	if run := runsDir(m.RunsDir).runDir(path); run != "" {
		if r, ok := readRecord(run); ok {
			if !r.live() { // its git directory was pruned
				return "", fmt.Errorf("%s: %w", path, ErrNotWorktree)
			}
			return r.admin, nil
		}
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return "", err
	}
	worktrees := filepath.Join(common, "worktrees")
	entries, err := os.ReadDir(worktrees)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	agents := runsDir(m.RunsDir).agentGitDirs()
	for _, e := range entries {
		admin := filepath.Join(worktrees, e.Name())
		if linked, ok := linkedPath(admin); ok && sameDir(linked, path) && !isAgentGitDir(admin, agents) {
			return admin, nil
		}
	}
	return "", fmt.Errorf("%s: %w", path, ErrNotWorktree)
}

// linkedAdmin is the git directory path's .git file names, if the repository's and naming path.
func linkedAdmin(common, path string) (string, bool) {
	admin, ok := readLink(filepath.Join(path, ".git"), "gitdir: ", path)
	if !ok || !sameDir(filepath.Dir(admin), filepath.Join(common, "worktrees")) {
		return "", false
	}
	linked, ok := linkedPath(admin)
	return admin, ok && sameDir(linked, path)
}

// commonDir is the repository's common git directory: CommonDir, or else git's answer.
func (m *Manager) commonDir(ctx context.Context) (string, error) {
	if m.CommonDir != "" {
		return m.CommonDir, nil
	}
	return m.Git.Output(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
}

// linkedPath is the work tree whose .git file admin's gitdir file names.
func linkedPath(admin string) (string, bool) {
	dotGit, ok := readLink(filepath.Join(admin, "gitdir"), "", admin)
	return filepath.Dir(dotGit), ok
}

// readLink is the path a git link file (gitdir, commondir, .git) names after prefix, from dir.
func readLink(file, prefix, dir string) (string, bool) {
	data, err := readSmallFile(file) // never a pipe an agent left, which would block
	if err != nil {
		return "", false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), prefix)
	if !ok || target == "" {
		return "", false
	}
	return gitdirPath(dir, target), true
}

// sameDir says whether a and b name the same existing directory, however they are spelled.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// relink restores the worktree's .git file linking it to admin when something deleted it or
// pointed it elsewhere: `git worktree remove` refuses a broken link. Anything else there is
// replaced, never written through (a symlink); a .git directory is left, and removal fails.
func relink(path, admin string) error {
	dotGit := filepath.Join(path, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err == nil && fi.IsDir(), pointsTo(dotGit, admin):
		return nil
	case err != nil && !os.IsNotExist(err):
		return err
	}
	return replaceFile(dotGit, strings.NewReader("gitdir: "+admin+"\n"))
}

// pointsTo says whether dotGit is a regular .git file naming admin (readLink reads no pipe).
func pointsTo(dotGit, admin string) bool {
	target, ok := readLink(dotGit, "gitdir: ", filepath.Dir(dotGit))
	return ok && sameDir(target, admin)
}

// branchOperation says which rebase or bisect, in which worktree, is working on branch, or "".
// git detaches HEAD meanwhile and moves the branch at the end, so the branch looks free; a
// landing then would fail the rebase ("cannot lock ref") and leave your rewritten commits on
// a detached HEAD. The main worktree's state is in commonDir, a linked one's in worktrees/<name>.
func branchOperation(commonDir, branch string, agents []string) string {
	if commonDir == "" {
		return ""
	}
	dirs, _ := filepath.Glob(filepath.Join(commonDir, "worktrees", "*"))
	for _, dir := range append([]string{commonDir}, dirs...) {
		if isAgentGitDir(dir, agents) {
			continue // no rebase of yours runs in a run worktree: an agent's word only
		}
		for _, op := range []struct{ file, what string }{
			{"rebase-merge/head-name", "a rebase"},
			{"rebase-apply/head-name", "a rebase"},
			{"BISECT_START", "a bisect"},
		} {
			data, err := readSmallFile(filepath.Join(dir, op.file))
			if err != nil {
				continue
			}
			name := strings.TrimPrefix(strings.TrimSpace(string(data)), "refs/heads/")
			if name == branch {
				return op.what + " in " + worktreeOf(commonDir, dir)
			}
		}
	}
	return ""
}

// worktreeOf names the checkout a worktree's git directory belongs to, for messages.
func worktreeOf(commonDir, dir string) string {
	if dir == commonDir {
		return filepath.Dir(commonDir)
	}
	if path, ok := linkedPath(dir); ok {
		return path
	}
	return dir
}
