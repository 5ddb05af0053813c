package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A run worktree's git directory (<common>/worktrees/<name>) is its agent's to write, its
// gitdir and HEAD included: all git reads to say where a worktree is and what it holds. So
// when git makes one, git-norma records which it is, in its own git directory beside it
// (where no step writes), by path and by device and inode (no agent changes those; a later
// directory of the same name does not share them). To remove, fast-forward or forget a
// worktree, git-norma takes the record's word for run worktrees, never theirs for any other.

// recordFile, in git-norma's own git directory for a run worktree, is the record: the git
// directory's path, its identity, and its gitdir file's line as git wrote it.
const recordFile = "agent-gitdir"

// record is one run worktree's recorded git directory.
type record struct {
	admin, id, gitdir string
}

// writeRecord records admin in the own git directory own.
func writeRecord(own, admin string) error {
	id, err := identity(admin)
	if err != nil {
		return err
	}
	gitdir, err := readSmallFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return err
	}
	line := strings.TrimSpace(string(gitdir))
	return os.WriteFile(filepath.Join(own, recordFile), []byte(admin+"\n"+id+"\n"+line+"\n"), 0o644)
}

// readRecord reads the record of the run directory run.
func readRecord(run string) (record, bool) {
	data, err := readSmallFile(filepath.Join(run, ownGitDirName, recordFile))
	if err != nil {
		return record{}, false
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		return record{}, false
	}
	r := record{admin: lines[0], id: lines[1], gitdir: lines[2]}
	return r, r.admin != "" && r.id != "" && r.gitdir != ""
}

// identity is a directory's device and inode.
func identity(dir string) (string, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return fmt.Sprintf("%d:%d", sys.Dev, sys.Ino), nil
}

// names says the record is one git made for the run directory run: its gitdir line names the
// run's worktree (git writes the real path; RunsDir may be a link). Any other (an unconfined
// agent can write one) would have git-norma take a worktree of yours for a run's.
func (r record) names(run string) bool {
	// git names a worktree's git directory after the worktree's: workspace, workspace1, ...
	if digits := strings.TrimPrefix(filepath.Base(r.admin), runWorkspaceName); strings.Trim(digits, "0123456789") != "" {
		return false
	}
	want, line := filepath.Join(run, runWorkspaceName, ".git"), filepath.Clean(gitdirPath(r.admin, r.gitdir))
	if line == want {
		return true
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(run))
	return err == nil && line == filepath.Join(real, filepath.Base(run), runWorkspaceName, ".git")
}

// live says the recorded git directory is still the one recorded.
func (r record) live() bool {
	id, err := identity(r.admin)
	return err == nil && id == r.id
}

// runsDir is the directory of the runs' directories (Manager.RunsDir), and what its records
// say of run worktrees.
type runsDir string

// records are the live records of every run directory.
func (d runsDir) records() map[string]record {
	recs := map[string]record{}
	if d == "" {
		return recs
	}
	files, _ := filepath.Glob(filepath.Join(string(d), "*", ownGitDirName, recordFile))
	for _, f := range files {
		run := filepath.Dir(filepath.Dir(f))
		if r, ok := readRecord(run); ok && r.live() && r.names(run) {
			recs[run] = r
		}
	}
	return recs
}

// agentGitDirs are the git directories agents may write: run worktrees' still as recorded.
func (d runsDir) agentGitDirs() []string {
	var dirs []string
	for _, r := range d.records() {
		dirs = append(dirs, r.admin)
	}
	return dirs
}

// isAgentGitDir says dir is one of agents (see agentGitDirs).
func isAgentGitDir(dir string, agents []string) bool {
	return slices.ContainsFunc(agents, func(a string) bool { return sameDir(a, dir) })
}

// vanished says the worktree of the git directory admin has no directory any more, by the
// record's word for a run worktree (an agent's gitdir may name <a live worktree>/x/.., gone
// only in name) and by its gitdir file for any other. Any record naming an existing worktree
// for it wins: an ended run's may name a git directory whose name and inode a later run reused.
func (d runsDir) vanished(admin string) bool {
	var lines []string
	for _, r := range d.records() {
		if sameDir(r.admin, admin) {
			lines = append(lines, r.gitdir)
		}
	}
	if len(lines) == 0 {
		data, err := readSmallFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			return false
		}
		lines = append(lines, strings.TrimSpace(string(data)))
	}
	for _, line := range lines {
		if _, err := os.Lstat(filepath.Dir(gitdirPath(admin, line))); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}

// gitdirPath is the path a line of a git link file in dir (gitdir, commondir, .git) names:
// absolute, or relative to dir (git's worktree.useRelativePaths).
func gitdirPath(dir, line string) string {
	if filepath.IsAbs(line) {
		return line
	}
	return filepath.Join(dir, line)
}

// lockedByNorma says the git directory admin is locked with one of git-norma's reasons.
func lockedByNorma(admin string) bool {
	data, err := readSmallFile(filepath.Join(admin, "locked"))
	reason := string(data)
	return err == nil && (strings.HasPrefix(reason, lockReason) || strings.HasPrefix(reason, checkLockReason))
}

// forget makes git forget one of git-norma's worktrees whose directory is gone by removing its
// git directory admin ("" for none). Never git worktree prune: it trusts every gitdir file,
// and an agent's naming your worktree had git delete yours as a duplicate. Nor is yours pruned.
func (m *Manager) forget(ctx context.Context, admin string) error {
	if admin == "" {
		return nil
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return err
	}
	if !sameDir(filepath.Dir(admin), filepath.Join(common, "worktrees")) {
		return fmt.Errorf("%s is not a worktree's git directory of this repository", admin)
	}
	if err := os.RemoveAll(admin); err != nil {
		return fmt.Errorf("forget the worktree of %s: %w", admin, err)
	}
	return nil
}

// runDir is the run directory of the run worktree at path (RunsDir/<run>/workspace), or "" when
// path is not exactly one: an agent could name .norma/runs/../../x or a directory in its
// workspace, beside which the git directory is its own making. Without RunsDir (tests), any
// path's parent.
func (d runsDir) runDir(path string) string {
	if d == "" {
		return filepath.Dir(path)
	}
	if run := runOf(string(d), filepath.Clean(path)); run != "" {
		return filepath.Join(string(d), run)
	}
	// git names worktrees by their real paths: the same place, reached without links.
	runs, err1 := filepath.EvalSymlinks(string(d))
	real, err2 := filepath.EvalSymlinks(path)
	if err1 != nil || err2 != nil {
		return ""
	}
	if run := runOf(runs, real); run != "" {
		return filepath.Join(string(d), run)
	}
	return ""
}

// ownSpelling is the run's own spelling (RunsDir/<run>/workspace) of the run worktree at
// path, or "" when path is not one (runDir). Without RunsDir (tests), path.
func (d runsDir) ownSpelling(path string) string {
	switch run := d.runDir(path); {
	case run == "":
		return ""
	case d == "":
		return path
	default:
		return filepath.Join(run, runWorkspaceName)
	}
}

// runOf is the run whose worktree path is (runs/<run>/workspace, nothing else), or "".
func runOf(runs, path string) string {
	rel, err := filepath.Rel(runs, path)
	run, name, ok := strings.Cut(filepath.ToSlash(rel), "/")
	if err != nil || !ok || name != runWorkspaceName || run == "" || run == "." || run == ".." {
		return ""
	}
	return run
}

// runWorkspaceName is the run worktree's name in its run directory.
const runWorkspaceName = "workspace"

// restoreRunLinks sets the recorded git directory's gitdir back to git's very line (not a link
// or another spelling) and its lock (when runID is known), and says whether it had to.
func restoreRunLinks(r record, runID string) (bool, error) {
	changed := false
	admin := r.admin
	if line, err := readSmallFile(filepath.Join(admin, "gitdir")); err != nil || strings.TrimSpace(string(line)) != r.gitdir {
		changed = true
		if err := replaceFile(filepath.Join(admin, "gitdir"), strings.NewReader(r.gitdir+"\n")); err != nil {
			return changed, err
		}
	}
	if runID == "" {
		return changed, nil
	}
	if st, err := os.Lstat(filepath.Join(admin, "locked")); err == nil && st.Mode().IsRegular() {
		return changed, nil
	}
	return true, replaceFile(filepath.Join(admin, "locked"), strings.NewReader(lockReason+runID))
}

// listJudged is git's worktree list with what judging it takes: the common directory, and the
// git directories of run worktrees, whose word on their own worktrees is their agents'.
func (m *Manager) listJudged(ctx context.Context) ([]Info, string, []string, error) {
	list, err := m.List(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	common, err := m.commonDir(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	return list, common, runsDir(m.RunsDir).agentGitDirs(), nil
}

// checkoutOf is the directory where branch is checked out, "" when none is. git's answer comes
// from each worktree's git directory, a run worktree's its agent's: one that set its HEAD to
// your branch would have a landing fast-forward its worktree (a repository of its own, hooks
// included) instead of your checkout. So only the main worktree counts, and linked worktrees
// whose git directory is no agent's, names them back and is on branch.
func (m *Manager) checkoutOf(ctx context.Context, branch string) (string, error) {
	list, common, agents, err := m.listJudged(ctx)
	if err != nil {
		return "", err
	}
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

// linkedCheckout says the linked worktree at path has branch checked out, by files no agent
// writes: its .git file names a git directory of the repository's, no agent's, which names
// path back and whose HEAD is on branch.
func linkedCheckout(common, path, branch string, agents []string) bool {
	admin, ok := linkedAdmin(common, path)
	if !ok || isAgentGitDir(admin, agents) {
		return false
	}
	head, err := readSmallFile(filepath.Join(admin, "HEAD"))
	return err == nil && strings.TrimSpace(string(head)) == "ref: refs/heads/"+branch
}
