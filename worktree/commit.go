package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/git-norma/git-norma/gitnorma/git"
)

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
			if errors.Is(err, ErrHistoryRewritten) {
				err = w.undoRewrite(context.WithoutCancel(ctx), since.Head, err)
			}
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
	tree := w.treeControl(ctx)
	control := inBackground(func() error { return w.controlChanges(ctx, since.Head, tree) })
	var measured int64
	patch := inBackground(func() (err error) {
		measured, err = w.diffBytes(ctx, "--cached", w.base)
		return err
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
	w.patch.head, w.patch.bytes = res.Commit, measured
	res.PatchBytes = measured
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

// undoRewrite puts the task branch, which the agent moved to a commit not built on from (a
// reset, an amend), back at from, and the worktree with it: what the branch held before the
// step is the task's work (earlier steps', earlier runs'), which the next run goes on from.
// The agent's history is kept under AttemptsPrefix, as a rollback keeps it; what it left
// uncommitted is committed on top of it first, not deleted by the reset (unsaved, the branch
// stays as the agent left it). It returns rewritten, saying where the branch and history are.
func (w *Workspace) undoRewrite(ctx context.Context, from string, rewritten error) error {
	var kept string
	err := w.commitUncommitted(ctx, "The agent rewrote the task branch; these changes it left uncommitted are kept with its history.")
	if err == nil {
		kept, err = w.Rollback(ctx, from)
	}
	if err == nil {
		err = w.syncAgentView()
	}
	if err != nil {
		return errors.Join(rewritten, fmt.Errorf("move the task branch back to %.10s: %w", from, err))
	}
	return fmt.Errorf("%w; the task branch is back at %.10s, the agent's history kept as %s", rewritten, from, kept)
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
	return w.commitUncommitted(ctx, "The run ended before its orchestrator commit; these changes were saved instead of discarded.")
}

// commitUncommitted commits what is uncommitted onto the task branch, why saying why in the
// commit's message; nothing when nothing is.
func (w *Workspace) commitUncommitted(ctx context.Context, why string) error {
	// Only ever onto the run's task branch: git-norma's own git directory is out of a confined
	// agent's reach, but an unconfined one could have pointed its HEAD at your branch, or
	// another task's.
	if branch, _, ok := git.ReadHeadAt(w.ownDir); w.ownDir != "" && (!ok || branch != "refs/heads/"+w.branch) {
		return fmt.Errorf("%w: git-norma's own HEAD for %s is %q, not %s; nothing was committed", ErrBranchSwitched, w.dir, branch, w.branch)
	}
	status, err := w.status(ctx, "--porcelain=v1")
	if err != nil || status == "" {
		return err
	}
	if err := w.git.Run(ctx, "add", "-A"); err != nil {
		return err
	}
	// What changed git-norma's config, the backlog or the hooks is not kept: only the user
	// changes them (a step's commit refuses them the same way).
	if err := w.git.Run(ctx, append([]string{"reset", "-q", "--"}, controlPaths(w.treeControl(ctx))...)...); err != nil {
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
	msg := fmt.Sprintf("chore(norma): keep uncommitted changes of run %s\n\n%s\n\nNorma-Task: %s\nNorma-Run: %s\nNorma-Role: rescue\n",
		w.runID, why, strings.TrimPrefix(w.branch, BranchPrefix), w.runID)
	_, err = w.commitIndex(ctx, head, msg)
	return err
}

// patchBytes is the size of the diff from base to head; remembered for the last head.
func (w *Workspace) patchBytes(ctx context.Context, head string) (int64, error) {
	if head == w.patch.head && head != "" {
		return w.patch.bytes, nil
	}
	n, err := w.diffBytes(ctx, w.base, head)
	if err != nil {
		return 0, err
	}
	w.patch.head, w.patch.bytes = head, n
	return n, nil
}

// diffBytes is the size of the binary patch `git diff args` writes, never held in memory.
func (w *Workspace) diffBytes(ctx context.Context, args ...string) (int64, error) {
	var c countingWriter
	err := w.git.Stream(ctx, &c, append([]string{"diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv"}, args...)...)
	return int64(c), err
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// inBackground runs fn beside the caller; the channel delivers its error.
func inBackground(fn func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
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
