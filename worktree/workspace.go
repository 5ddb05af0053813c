package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Workspace is one run's worktree on its task branch.
type Workspace struct {
	dir string
	// gitDir is the agent's git directory of the worktree: its HEAD, index, locks (owngit.go).
	gitDir string
	// ownDir is git-norma's own git directory for it; rec, its record of gitDir (runadmin.go).
	ownDir string
	rec    record
	// common is the repository's common git directory, which gitDir/commondir must name.
	common string
	// worktreeConfig is gitDir/config.worktree as git made it (nil: none): git reads it under
	// extensions.worktreeConfig, so an agent could set filters, fsmonitor, hooks there.
	worktreeConfig []byte
	branch         string
	taskID         string
	runID          string
	// base is where the task branch forks from the target; patch sizes are measured from it.
	base string
	git  git.Runner
	// settled is the state the last settling read, for the next State (see there).
	settled *State
	// hooksDir is treeHooksDir's answer, read once: core.hooksPath is in the shared config,
	// which no confined agent writes and the fallback guard restores.
	hooksDir *string
	// patch is the last patch size measured, and its head.
	patch struct {
		head  string
		bytes int64
	}
	// CaughtUp is what bringing the existing branch up to date with the target did.
	CaughtUp CatchUp
	// Started: this run created the task branch from the target, or restarted it after a
	// conflict; it holds nothing of the target's history beyond Base.
	Started bool
}

// Dir is the worktree's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// GitDir is the agent's git directory of the worktree (<common>/worktrees/<name>), its HEAD
// and index; git-norma's own git uses another (owngit.go).
func (w *Workspace) GitDir() string { return w.gitDir }

// Branch is the task branch checked out in the worktree.
func (w *Workspace) Branch() string { return w.branch }

// Base is the commit the task branch forked from.
func (w *Workspace) Base() string { return w.base }

// State is a point-in-time view of the worktree: HEAD and a hash of `git status`.
type State struct {
	Head   string
	Status string
}

// ErrBranchSwitched and ErrHistoryRewritten are agent faults found after a writing step.
var (
	ErrBranchSwitched   = errors.New("the workspace is no longer on its task branch")
	ErrHistoryRewritten = errors.New("the task branch history was rewritten")
	ErrLinkChanged      = errors.New("the worktree's git directory was rewritten (restored): commondir, gitdir, locked or config.worktree")
	ErrControlFiles     = errors.New("the step changed git-norma's config, the backlog or the hooks")
	// ErrUnaddable: git cannot add what the step left, such as a nested repository without
	// a commit (git init lib): git-norma's index is its own, so it is what is in the files.
	ErrUnaddable = errors.New("git cannot add what the step left in the worktree")
)

// controlDirs hold what only the user changes: git-norma's config (gates, sandbox mode, the
// worktree.setup and notify commands it runs unconfined) and the backlog (every task's
// Verify). Landed, a change there would let an agent lift its confinement or weaken checks.
var controlDirs = []string{".norma", ".beads"}

// controlPaths are controlDirs and the work tree's hooks directory hooks ("": none).
func controlPaths(hooks string) []string {
	if hooks == "" {
		return controlDirs
	}
	return append(slices.Clone(controlDirs), hooks)
}

// controlChanges is ErrControlFiles naming the changes staged since head under
// controlPaths(hooks), or nil. It only reads the index: it runs beside the commit.
func (w *Workspace) controlChanges(ctx context.Context, head, hooks string) error {
	paths, err := controlDiff(ctx, w.git, hooks, "--cached", head)
	if err != nil || len(paths) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s): only the user changes them", ErrControlFiles, strings.Join(paths, ", "))
}

// ControlChanges lists the paths under controlPaths that head changes since it forked from
// target (target...head). A landing refuses them however they got there: a remote's branch too.
func (m *Manager) ControlChanges(ctx context.Context, target, head string) ([]string, error) {
	return controlDiff(ctx, m.Git, treeHooksDirOf(ctx, m.Git), target+"..."+head)
}

// controlDiff lists the paths under controlPaths(hooks) that `git diff args` changes.
func controlDiff(ctx context.Context, g git.Runner, hooks string, args ...string) ([]string, error) {
	args = append([]string{"diff", "--name-only", "--no-renames", "-z"}, args...)
	out, err := g.Output(ctx, append(append(args, "--"), controlPaths(hooks)...)...)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(strings.Trim(out, "\x00"), "\x00"), nil
}

// inBackground runs fn beside the caller; the channel delivers its error.
func inBackground(fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
}

// treeHooksDir is the work-tree directory a relative core.hooksPath names (husky's ".husky/_":
// ".husky", its scripts), or "": git commands in your checkout run them, the landing's first.
func (w *Workspace) treeHooksDir(ctx context.Context) string {
	if w.hooksDir == nil {
		dir := treeHooksDirOf(ctx, w.git)
		w.hooksDir = &dir
	}
	return *w.hooksDir
}

// treeHooksDirOf is the work-tree hooks directory (see treeHooksDir) of the repository g runs in.
func treeHooksDirOf(ctx context.Context, g git.Runner) string {
	g.NoHooks = false // which would answer its own /dev/null
	path, err := g.Output(ctx, "config", "--get", "core.hooksPath")
	path = filepath.ToSlash(filepath.Clean(strings.TrimSpace(path)))
	if err != nil || path == "." || filepath.IsAbs(path) || strings.HasPrefix(path, "~") || strings.HasPrefix(path, "../") {
		return ""
	}
	if dir, base := filepath.Split(path); base == "_" && dir != "" {
		return strings.TrimSuffix(dir, "/")
	}
	return path
}

// restoreWorktreeConfig puts gitDir/config.worktree back as git made it; true if it had to.
func (w *Workspace) restoreWorktreeConfig() (bool, error) {
	path := filepath.Join(w.gitDir, "config.worktree")
	data, err := os.ReadFile(path)
	st, lerr := os.Lstat(path)
	switch {
	case w.worktreeConfig == nil && os.IsNotExist(lerr):
		return false, nil
	case err == nil && lerr == nil && st.Mode().IsRegular() && bytes.Equal(data, w.worktreeConfig):
		return false, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return true, err
	}
	if w.worktreeConfig == nil {
		return true, nil
	}
	return true, os.WriteFile(path, w.worktreeConfig, 0o644)
}

// removeOddFiles removes what is neither a directory nor a regular file in the git directory
// dir, and says whether there was any. git-norma's git opens files there (COMMIT_EDITMSG,
// logs/HEAD): through an agent's symlink it would write wherever that points (~/.bashrc), on
// a pipe it would block.
func removeOddFiles(dir string) (bool, error) {
	removed := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		removed = true
		return os.Remove(path)
	})
	return removed, err
}

// relinkCommon restores the git directory's commondir (and what removeOddFiles,
// restoreWorktreeConfig and restoreRunLinks restore), and says whether it had to. A confined
// agent may write that directory; git takes the ref store from commondir even under
// GIT_COMMON_DIR, so git-norma's commit would move refs wherever the agent chose.
func (w *Workspace) relinkCommon() (bool, error) {
	removed, err := removeOddFiles(w.gitDir)
	if err != nil {
		return removed, err
	}
	changed, err := w.restoreWorktreeConfig()
	changed = changed || removed
	if err != nil || w.common == "" {
		return changed, err
	}
	// A gitdir naming your worktree would have a prune delete yours as a duplicate; without
	// its lock a prune could drop this one.
	if w.rec.admin != "" {
		relinked, err := restoreRunLinks(w.rec, w.runID)
		changed = changed || relinked
		if err != nil {
			return changed, err
		}
	}
	path := filepath.Join(w.gitDir, "commondir")
	if named, ok := readLink(path, "", w.gitDir); ok {
		if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && sameDir(named, w.common) {
			return changed, nil
		}
	}
	tmp := path + ".norma-restore"
	_ = os.Remove(tmp)
	if err := os.WriteFile(tmp, []byte(w.common+"\n"), 0o644); err != nil {
		return true, err
	}
	return true, os.Rename(tmp, path)
}

// State reads HEAD and the status fingerprint; right after a settling (Changes, a Commit that
// committed nothing) it is what that read: only git-norma runs between, touching nothing.
func (w *Workspace) State(ctx context.Context) (State, error) {
	if s := w.settled; s != nil {
		w.settled = nil
		return *s, nil
	}
	v, err := w.read(ctx)
	return v.state, err
}

// Head reads HEAD alone, before a step whose changes are committed rather than compared
// (Commit needs where it started, not what was uncommitted then).
func (w *Workspace) Head(ctx context.Context) (string, error) {
	if _, err := w.relinkCommon(); err != nil {
		return "", err
	}
	return w.headCommit(ctx)
}

// view is the worktree as one `git status` sees it.
type view struct {
	state State
	// branch is the checked-out branch's full ref ("" when HEAD is detached).
	branch string
	// paths are the changed paths (a rename's both sides).
	paths []string
}

// read is one git process: porcelain v2 with --branch gives HEAD, the branch and the changed
// paths. Nested repositories count by their commit (--ignore-submodules=dirty): git-norma
// commits a gitlink, never their files, and an agent's broken one (git init lib) must not
// make git fail here.
func (w *Workspace) read(ctx context.Context) (view, error) {
	if _, err := w.relinkCommon(); err != nil {
		return view{}, err
	}
	out, err := w.git.Output(ctx, append(statusArgs, "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--ignore-submodules=dirty")...)
	if err != nil {
		return view{}, err
	}
	var v view
	var entries []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "":
		case strings.HasPrefix(f, "# branch.oid "):
			v.state.Head = strings.TrimPrefix(f, "# branch.oid ")
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				v.branch = "refs/heads/" + b
			}
		case strings.HasPrefix(f, "#"):
		default:
			entries = append(entries, f)
			path, renamed := statusPath(f)
			v.paths = append(v.paths, path)
			// A rename or copy is followed by its source path as a field of its own.
			if renamed && i+1 < len(fields) {
				i++
				entries = append(entries, fields[i])
				if fields[i] != "" {
					v.paths = append(v.paths, fields[i])
				}
			}
		}
	}
	if v.state.Head == "" || v.state.Head == "(initial)" {
		return view{}, fmt.Errorf("read HEAD of %s: no commit checked out", w.dir)
	}
	// A step that checked out another branch or commit changed the worktree even when the
	// files are the same: git-norma's own HEAD does not show it, the agent's does.
	if !w.agentOnBranch() {
		moved := "HEAD: " + w.agentHead()
		entries, v.paths = append(entries, moved), append(v.paths, moved)
	}
	sum := sha256.Sum256([]byte(strings.Join(entries, "\x00")))
	v.state.Status = hex.EncodeToString(sum[:])
	return v, nil
}

// statusPath is the path of one porcelain v2 entry: "1 XY sub mH mI mW hH hI path",
// "2 XY sub mH mI mW hH hI Xscore path" (a rename), "u XY sub m1 m2 m3 mW h1 h2 h3 path",
// "? path" or "! path".
func statusPath(entry string) (path string, renamed bool) {
	n := map[byte]int{'1': 9, '2': 10, 'u': 11, '?': 2, '!': 2}[entry[0]]
	if n == 0 {
		return entry, false
	}
	parts := strings.SplitN(entry, " ", n)
	return parts[len(parts)-1], entry[0] == '2'
}

// statusArgs make a status a pure read: otherwise git status rewrites the index whenever it
// refreshed file times, after nearly every step — a window in which another git command in
// the worktree fails on index.lock. The answer is the same either way.
var statusArgs = []string{"--no-optional-locks", "status"}

// Changes lists what differs from an earlier state: a moved HEAD and every changed path.
func (w *Workspace) Changes(ctx context.Context, since State) ([]string, error) {
	now, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.settled = &now.state
	if now.state == since {
		return nil, nil
	}
	var changes []string
	if now.state.Head != since.Head {
		changes = append(changes, fmt.Sprintf("HEAD moved from %.10s to %.10s", since.Head, now.state.Head))
	}
	return append(changes, now.paths...), nil
}

// Discard returns a run's worktree to the state's commit after a read-only step dirtied it.
func (w *Workspace) Discard(ctx context.Context, to State) error {
	w.settled = nil
	// The agent's git directory as git-norma made it (its own git directory is git-norma's:
	// HEAD there is on the task branch, whatever the step checked out).
	if _, err := w.relinkCommon(); err != nil {
		return err
	}
	if err := w.resetClean(ctx, to.Head); err != nil {
		return err
	}
	return w.syncAgentView()
}

// CommitResult is what an orchestrator commit produced.
type CommitResult struct {
	Commit       string
	Changed      bool
	PatchBytes   int64
	AgentCommits int
}

// StepCommit describes the step being committed; it becomes the commit's subject and trailers.
type StepCommit struct {
	Role      string
	StepIndex int
	Iteration int
	Summary   string
	// ExpectChanges: the step almost always changes the workspace (Do), so the commit starts
	// from `git add -A`, not a status read: one git call fewer, two more if nothing changed.
	ExpectChanges bool
}

// Commit commits what a writing step changed since `since`, folding in the agent's own commits
// on top of it; a switched branch or rewritten history is refused.
func (w *Workspace) Commit(ctx context.Context, since State, sc StepCommit) (res CommitResult, err error) {
	w.settled = nil
	if changed, err := w.relinkCommon(); err != nil || changed {
		return res, errors.Join(ErrLinkChanged, err)
	}
	if !w.agentOnBranch() {
		return res, fmt.Errorf("%w (HEAD is %q, want %s)", ErrBranchSwitched, w.agentHead(), w.branch)
	}
	now, err := w.position(ctx, sc.ExpectChanges)
	if err != nil {
		return res, err
	}
	if now.branch != "refs/heads/"+w.branch {
		return res, fmt.Errorf("%w (HEAD is %q, want %s)", ErrBranchSwitched, now.branch, w.branch)
	}
	if now.state.Head != since.Head {
		if res.AgentCommits, err = w.foldAgentCommits(ctx, since.Head, now.state.Head); err != nil {
			return res, err
		}
	}
	// The agent's git sees what was committed (its index and HEAD as git-norma's), whatever
	// became of the commit. git-norma's index never held what the agent staged: objects of its
	// private store, which the repository lacks, and which git add -A below hashes again.
	defer func() {
		if serr := w.syncAgentView(); serr != nil && err == nil {
			err = serr
		}
	}()
	res.Commit = since.Head
	if !sc.ExpectChanges && len(now.paths) == 0 && res.AgentCommits == 0 {
		w.settled = &now.state
		res.PatchBytes, err = w.patchBytes(ctx, res.Commit)
		return res, err
	}
	if err := w.git.Run(ctx, "add", "-A"); err != nil {
		return res, fmt.Errorf("%w: %w", ErrUnaddable, err)
	}
	// What is staged now is what the commit will hold: the look for control files and the
	// task's patch measure (the diff from the base) read it while the commit is made, reading
	// only the index (never contending for index.lock). A commit that holds control files is
	// taken back below, leaving the branch as it was.
	hooks := w.treeHooksDir(ctx)
	control := inBackground(func() error { return w.controlChanges(ctx, since.Head, hooks) })
	var measured countingWriter
	patch := inBackground(func() error {
		return w.git.Stream(ctx, &measured, "diff", "--cached", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", w.base)
	})
	commit, err := w.commitIndex(ctx, since.Head, stepMessage(w.taskID, w.runID, sc))
	measureErr, refused := <-patch, <-control
	if refused != nil {
		if err == nil && commit != "" {
			err = w.moveBranch(context.WithoutCancel(ctx), since.Head)
		}
		return res, errors.Join(refused, err)
	}
	if err != nil {
		return res, err
	}
	if commit != "" {
		res.Commit, res.Changed = commit, true
	}
	if measureErr != nil {
		return res, measureErr
	}
	w.patch.head, w.patch.bytes = res.Commit, int64(measured)
	res.PatchBytes = int64(measured)
	return res, nil
}

// position is where the workspace stands before a commit: with changes expected, HEAD alone,
// from the files (git add finds the paths); otherwise one status read, which can spare the commit.
func (w *Workspace) position(ctx context.Context, expectChanges bool) (view, error) {
	if expectChanges {
		if branch, head, ok := git.ReadHeadAt(w.ownDir); ok {
			return view{state: State{Head: head}, branch: branch}, nil
		}
	}
	return w.read(ctx)
}

// headCommit is the commit HEAD points at, read from the files where git's layout allows.
func (w *Workspace) headCommit(ctx context.Context) (string, error) {
	if _, head, ok := git.ReadHeadAt(w.ownDir); ok {
		return head, nil
	}
	return w.git.Output(ctx, "rev-parse", "HEAD")
}

// commitIndex commits the index on parent (HEAD) with msg and moves the task branch there; ""
// when the index holds parent's tree. Where this tree's git is confined (filter drivers:
// git.Runner.Confine), commit-tree and update-ref run outside the sandbox, which so never
// writes a ref: a driver a work-tree path names is the agent's code.
func (w *Workspace) commitIndex(ctx context.Context, parent, msg string) (string, error) {
	if w.git.Confine == nil {
		// maintenance.auto=false: a step commit does not start `git maintenance run --auto`
		// (one more process per iteration); the user's own git commands still do.
		_, err := w.git.Input(ctx, strings.NewReader(msg), "-c", "maintenance.auto=false", "commit", "-q", "--no-verify", "-F", "-")
		switch {
		case err == nil:
			return w.headCommit(ctx)
		// Nothing to commit (changes that stage to nothing, an agent's commits that undo
		// each other) is no failure.
		case git.ExitCodeOf(err) == 1 && w.git.Run(ctx, "diff", "--cached", "--quiet") == nil:
			return "", nil
		}
		return "", err
	}
	tree, err := w.git.Output(ctx, "write-tree")
	if err != nil {
		return "", err
	}
	if was, err := w.git.Output(ctx, "rev-parse", parent+"^{tree}"); err != nil || was == tree {
		return "", err
	}
	commit, err := w.git.Input(ctx, strings.NewReader(msg), "commit-tree", tree, "-p", parent, "-F", "-")
	if err != nil {
		return "", err
	}
	subject, _, _ := strings.Cut(msg, "\n")
	// The reflog says what git commit would: the hooks' gate reads it.
	return commit, w.git.Run(ctx, "update-ref", "-m", "commit: "+subject, "HEAD", commit, parent)
}

// moveBranch moves the task branch, through git-norma's HEAD, to commit to, leaving the index
// and the files: reset --soft, its ref moved outside the sandbox (see commitIndex).
func (w *Workspace) moveBranch(ctx context.Context, to string) error {
	if w.git.Confine == nil {
		return w.git.Run(ctx, "reset", "-q", "--soft", to)
	}
	return w.git.Run(ctx, "update-ref", "-m", "reset: moving to "+to, "HEAD", to)
}

// resetClean moves the task branch to commit to, checks it out and removes what is untracked:
// reset --hard (confined: its ref moved outside the sandbox, see commitIndex, its files by
// read-tree, which moves no ref), then clean.
func (w *Workspace) resetClean(ctx context.Context, to string) error {
	var err error
	if w.git.Confine == nil {
		err = w.git.Run(ctx, "reset", "-q", "--hard", to)
	} else if err = w.moveBranch(ctx, to); err == nil {
		err = w.git.Run(ctx, "read-tree", "--reset", "-u", "HEAD")
	}
	if err != nil {
		return err
	}
	return w.git.Run(ctx, "clean", "-fdq")
}

// foldAgentCommits soft-resets the agent's commits on top of from into the orchestrator's.
func (w *Workspace) foldAgentCommits(ctx context.Context, from, to string) (int, error) {
	if onTop, err := w.git.IsAncestor(ctx, from, to); err != nil {
		return 0, err
	} else if !onTop {
		return 0, fmt.Errorf("%w: %.10s is not an ancestor of %.10s (the agent must not reset, rebase or amend)", ErrHistoryRewritten, from, to)
	}
	count, err := w.git.Output(ctx, "rev-list", "--count", from+".."+to)
	if err != nil {
		return 0, err
	}
	if err := w.moveBranch(ctx, from); err != nil {
		return 0, err
	}
	var n int
	fmt.Sscan(count, &n)
	return n, nil
}

// rescue commits what is uncommitted (an interrupted step's work) before the worktree goes.
func (w *Workspace) rescue(ctx context.Context) error {
	w.settled = nil
	// The worktree goes after this commit, and its config.worktree with it: none is read for
	// the commit (it could name a filter, written by the agent), nor a commondir, symbolic
	// link or pipe the agent left in the git directory.
	w.worktreeConfig = nil
	if _, err := w.relinkCommon(); err != nil {
		return err
	}
	// Only ever onto the run's task branch: git-norma's own git directory is out of a confined
	// agent's reach, but an unconfined one could have pointed its HEAD at your branch, or
	// another task's.
	if branch, _, ok := git.ReadHeadAt(w.ownDir); w.ownDir != "" && (!ok || branch != "refs/heads/"+w.branch) {
		return fmt.Errorf("%w: git-norma's own HEAD for %s is %q, not %s; nothing was committed", ErrBranchSwitched, w.dir, branch, w.branch)
	}
	status, err := w.git.Output(ctx, append(statusArgs, "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=dirty")...)
	if err != nil || status == "" {
		return err
	}
	if err := w.git.Run(ctx, "add", "-A"); err != nil {
		return err
	}
	// What changed git-norma's config, the backlog or the hooks is not kept: only the user
	// changes them (a step's commit refuses them the same way).
	if err := w.git.Run(ctx, append([]string{"reset", "-q", "--"}, controlPaths(w.treeHooksDir(ctx))...)...); err != nil {
		return err
	}
	if w.git.Run(ctx, "diff", "--cached", "--quiet") == nil {
		return nil // nothing else to keep
	}
	// The task and a role in its trailers, as a step commit's: the hooks take it for the task's
	// work (unverified) wherever it travels, not only where its branch's reflog says so.
	head, err := w.headCommit(ctx)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("chore(norma): keep uncommitted changes of run %s\n\nThe run ended before its orchestrator commit; these changes were saved instead of discarded.\n\nNorma-Task: %s\nNorma-Run: %s\nNorma-Role: rescue\n",
		w.runID, strings.TrimPrefix(w.branch, BranchPrefix), w.runID)
	_, err = w.commitIndex(ctx, head, msg)
	return err
}

// patchBytes is the size of the diff from base to head; remembered for the last head.
func (w *Workspace) patchBytes(ctx context.Context, head string) (int64, error) {
	if head == w.patch.head && head != "" {
		return w.patch.bytes, nil
	}
	var c countingWriter
	if err := w.git.Stream(ctx, &c, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", w.base, head); err != nil {
		return 0, err
	}
	w.patch.head, w.patch.bytes = head, int64(c)
	return int64(c), nil
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// stepMessage is a step commit's message: a Conventional Commit header, summary, trailers.
func stepMessage(taskID, runID string, sc StepCommit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chore(norma): %s step %03d of %s (iteration %d)\n\n", sc.Role, sc.StepIndex, taskID, sc.Iteration)
	if s := strings.TrimSpace(sc.Summary); s != "" {
		fmt.Fprintf(&b, "%s\n\n", wrap(s, 72))
	}
	fmt.Fprintf(&b, "Norma-Task: %s\nNorma-Run: %s\nNorma-Step: %03d\nNorma-Role: %s\n", taskID, runID, sc.StepIndex, sc.Role)
	return b.String()
}

// wrap breaks text into lines of at most width runes at spaces. The summary is never the last
// paragraph, so it can never be mistaken for the trailer block.
func wrap(text string, width int) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
