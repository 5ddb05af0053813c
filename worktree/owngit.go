package worktree

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A run's worktree has two git directories. The one git made (<common>/worktrees/<name>,
// named by the worktree's .git file) is the agent's: its git finds it, and a confined agent
// may write it — its index is there. git-norma's own git commands in the worktree never use
// it: whatever is there (a HEAD, a commondir naming another repository, a config.worktree
// with a filter, a link where git would write COMMIT_EDITMSG or logs/HEAD) is the agent's to
// make, even while git-norma's commit runs, should a process of the step outlive it. They
// use a git directory of git-norma's own beside the worktree, in the run's directory where no
// step writes: the same repository (its commondir), HEAD on the task branch, an index of its
// own. After each of git-norma's changes the agent's HEAD and index are set to match, so the
// agent's git sees what was committed.

// ownGitDirName is git-norma's own git directory for the run worktree, next to it
// (.norma/runs/<run>/git).
const ownGitDirName = "git"

// agentGitDirFile, in git-norma's own git directory, names the worktree's git directory: the
// one an agent may write (see Manager.agentGitDirs).
const agentGitDirFile = "agent-gitdir"

// ownGitDirOf is where git-norma's own git directory for the worktree at path goes.
func ownGitDirOf(path string) string { return filepath.Join(filepath.Dir(path), ownGitDirName) }

// makeOwnGitDir makes git-norma's own git directory for the worktree at path from the
// worktree's git directory admin as git made it: fresh says git has just made it (nothing
// else ran there since); otherwise an existing one is kept, and one is made only for a
// worktree an older git-norma created, from what is there.
func makeOwnGitDir(path, admin, common string, fresh bool) (string, error) {
	own := ownGitDirOf(path)
	if !fresh {
		if st, err := os.Lstat(filepath.Join(own, "HEAD")); err == nil && st.Mode().IsRegular() {
			return own, nil
		}
	}
	head, err := readSmallFile(filepath.Join(admin, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("read the worktree's HEAD: %w", err)
	}
	// Made aside and renamed into place, so that a crash leaves either none or a whole one.
	tmp := own + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", err
	}
	err = os.WriteFile(filepath.Join(tmp, "HEAD"), head, 0o644)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "commondir"), []byte(common+"\n"), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, agentGitDirFile), []byte(admin+"\n"), 0o644)
	}
	if err == nil {
		// None (an agent removed it) is an empty index: git add fills it again.
		if err = copyRegular(filepath.Join(admin, "index"), filepath.Join(tmp, "index")); os.IsNotExist(err) {
			err = nil
		}
	}
	if err == nil {
		err = os.RemoveAll(own)
	}
	if err == nil {
		err = os.Rename(tmp, own)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("make git-norma's own git directory for %s: %w", path, err)
	}
	return own, nil
}

// agentHead is the agent's HEAD file, read as data ("" when it is not a small regular file).
func (w *Workspace) agentHead() string {
	data, err := readSmallFile(filepath.Join(w.gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// agentOnBranch says the agent's HEAD is still on the task branch.
func (w *Workspace) agentOnBranch() bool {
	return w.branch == "" || w.agentHead() == "ref: refs/heads/"+w.branch
}

// syncAgentView sets the agent's HEAD and index to git-norma's, after git-norma changed them.
// Each is written aside and renamed over: never through whatever the agent left at its path.
func (w *Workspace) syncAgentView() error {
	if w.ownDir == "" {
		return nil
	}
	if !w.agentOnBranch() {
		if err := replaceFile(filepath.Join(w.gitDir, "HEAD"), func(f *os.File) error {
			_, err := f.WriteString("ref: refs/heads/" + w.branch + "\n")
			return err
		}); err != nil {
			return fmt.Errorf("put the worktree's HEAD back on %s: %w", w.branch, err)
		}
	}
	src, err := os.Open(filepath.Join(w.ownDir, "index"))
	if err != nil {
		return err
	}
	defer src.Close()
	return replaceFile(filepath.Join(w.gitDir, "index"), func(f *os.File) error {
		_, err := io.Copy(f, src)
		return err
	})
}

// replaceFile writes a new file with fill and renames it over path. The new file is created
// exclusively: a link or pipe left at its name is removed, never followed.
func replaceFile(path string, fill func(*os.File) error) error {
	tmp := path + ".norma-new"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// copyRegular copies the regular file from to a new file to.
func copyRegular(from, to string) error {
	src, err := openRegular(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// openRegular opens path for reading only when it is a regular file (a pipe would block).
func openRegular(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.Open(path)
}

// readSmallFile reads a regular file of at most 4 KiB (a HEAD).
func readSmallFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4097))
	if err == nil && len(data) > 4096 {
		err = fmt.Errorf("%s is too large for a HEAD", path)
	}
	return data, err
}

// agentGitDirs are the git directories agents may write: the run worktrees', as git-norma
// recorded them when git made them. What is there (a HEAD on your branch, a gitdir naming
// another checkout, a rebase in progress) is no word of git's on your checkouts.
func (m *Manager) agentGitDirs() []string {
	if m.RunsDir == "" {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(m.RunsDir, "*", ownGitDirName, agentGitDirFile))
	var dirs []string
	for _, f := range files {
		if data, err := readSmallFile(f); err == nil {
			dirs = append(dirs, strings.TrimSpace(string(data)))
		}
	}
	return dirs
}

// isAgentGitDir says dir is one of agents (see agentGitDirs).
func isAgentGitDir(dir string, agents []string) bool {
	for _, a := range agents {
		if sameDir(a, dir) {
			return true
		}
	}
	return false
}

// checkoutOf is the directory where branch is checked out, "" when none is. git's own answer
// (worktree list, for-each-ref's %(worktreepath)) comes from each worktree's git directory,
// and a run worktree's is its agent's to write: an agent that set its HEAD to your branch
// would have a landing fast-forward its worktree (even through a .git file it pointed at a
// repository of its own, hooks included) instead of your checkout. So only the main worktree
// (its HEAD is in the common directory) and linked worktrees whose git directory is not an
// agent's, names them back and is on branch count.
func (m *Manager) checkoutOf(ctx context.Context, branch string) (string, error) {
	list, err := m.List(ctx)
	if err != nil {
		return "", err
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return "", err
	}
	agents := m.agentGitDirs()
	for i, wt := range list {
		// A checkout whose directory is gone holds nothing to protect.
		if wt.Branch != branch || wt.Bare || !exists(wt.Path) {
			continue
		}
		if i == 0 || linkedCheckout(common, wt.Path, branch, agents) {
			return wt.Path, nil
		}
	}
	return "", nil
}

// linkedCheckout says the linked worktree at path has branch checked out, read only from
// files no agent writes: its .git file names a git directory of the repository's, not an
// agent's, which names path back and whose HEAD is on branch.
func linkedCheckout(common, path, branch string, agents []string) bool {
	link, err := readSmallFile(filepath.Join(path, ".git"))
	if err != nil {
		return false
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(link)), "gitdir: ")
	if !ok {
		return false
	}
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(path, admin)
	}
	if !sameDir(filepath.Dir(admin), filepath.Join(common, "worktrees")) || isAgentGitDir(admin, agents) {
		return false
	}
	back, err := readSmallFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return false
	}
	dotGit := strings.TrimSpace(string(back))
	if !filepath.IsAbs(dotGit) {
		dotGit = filepath.Join(admin, dotGit)
	}
	if !sameDir(filepath.Dir(dotGit), path) {
		return false
	}
	head, err := readSmallFile(filepath.Join(admin, "HEAD"))
	return err == nil && strings.TrimSpace(string(head)) == "ref: refs/heads/"+branch
}
