package worktree

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Landing refusals. In every case the target is unchanged and no checkout was touched.
var (
	// ErrConflict: the task branch does not merge cleanly into the target.
	ErrConflict = errors.New("the task branch conflicts with the target")
	// ErrDirtyOverlap: the target is checked out with local edits to files the squash changes.
	ErrDirtyOverlap = errors.New("local changes in the target's checkout overlap the task's changes")
	// ErrTargetMoved: the target kept moving while landing (compare-and-swap failed every try).
	ErrTargetMoved = errors.New("the target branch moved while landing")
	// ErrTargetBusy: a rebase or bisect is working on the target branch.
	ErrTargetBusy = errors.New("the target branch is in the middle of an operation")
	// ErrCheckoutBusy: the target's checkout cannot be advanced now (an unfinished merge, or
	// another git command holding its index).
	ErrCheckoutBusy = errors.New("the target's checkout cannot be advanced now")
)

// LandError carries the paths behind a refusal.
type LandError struct {
	Err   error
	Paths []string
	// Detail is git's own message, when it said more than the paths.
	Detail string
	// Theirs is the commit the remote's task branch held when a push found it taken
	// (ErrBranchTaken; "" when it was deleted there).
	Theirs string
}

func (e *LandError) Error() string {
	if len(e.Paths) > 0 {
		return fmt.Sprintf("%v: %s", e.Err, strings.Join(e.Paths, ", "))
	}
	if e.Detail != "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Detail)
	}
	return e.Err.Error()
}

func (e *LandError) Unwrap() error { return e.Err }

// LandOptions say what to land where.
type LandOptions struct {
	Target     string
	TaskBranch string
	// Head is the verified task branch commit: what lands, even should the branch move since.
	// Empty lands whatever the branch points at.
	Head string
	// Base, when set, is the target commit the landing was checked against: a target
	// anywhere else now is ErrTargetMoved, never a landing on an unchecked combination.
	Base string
	// Message is the squash commit's full message.
	Message string
	// Remote, when set, is where the landing goes first, by a compare-and-swap push; the local
	// target (brought to the remote's by SyncTarget) follows once it is there.
	Remote string
}

// LandResult is a landing that happened (or found nothing to land).
type LandResult struct {
	Commit string
	// Parent is the target tip the squash commit was built on.
	Parent string
	// Empty means the task branch adds nothing to the target; no commit was made.
	Empty bool
	// Checkout is the worktree whose checkout was fast-forwarded, if the target was checked out.
	Checkout string
	// LocalBehind says why the local target did not follow a landing that is on the remote
	// (local edits in its checkout overlap it, say): the landing happened all the same.
	LocalBehind string
}

// landAttempts bounds retries when the target moves between reading and updating it.
const landAttempts = 3

// Land squashes the task branch onto the target in object space and moves the target by
// compare-and-swap; a checkout of the target is advanced with `git merge --ff-only`, so git
// itself refuses to overwrite local edits. It never stashes or resets your checkout.
func (m *Manager) Land(ctx context.Context, o LandOptions) (LandResult, error) {
	var err error
	for range landAttempts {
		var res LandResult
		res, err = m.landOnce(ctx, o)
		if !errors.Is(err, ErrTargetMoved) || o.Remote != "" || o.Base != "" {
			// A moved target needs a new look at what lands (a fetch, a re-check): the caller's.
			return res, err
		}
	}
	return LandResult{}, err
}

func (m *Manager) landOnce(ctx context.Context, o LandOptions) (LandResult, error) {
	tip, err := m.branchTip(ctx, o.Target)
	if err != nil {
		return LandResult{}, err
	}
	if o.Base != "" && tip.commit != o.Base {
		return LandResult{}, &LandError{Err: ErrTargetMoved, Detail: fmt.Sprintf("%s moved from %.10s, where the landing was checked, to %.10s", o.Target, o.Base, tip.commit)}
	}
	head := cmp.Or(o.Head, "refs/heads/"+o.TaskBranch)
	common, err := m.commonDir(ctx)
	if err != nil {
		return LandResult{}, err
	}
	if op := branchOperation(common, o.Target, runsDir(m.RunsDir).agentGitDirs()); op != "" {
		return LandResult{}, &LandError{Err: ErrTargetBusy, Detail: op}
	}
	tree, err := m.mergeTree(ctx, tip.commit, head)
	if err != nil {
		return LandResult{}, err
	}
	if tip.checkout, err = m.checkoutOf(ctx, o.Target); err != nil {
		return LandResult{}, err
	}
	res := LandResult{Parent: tip.commit, Checkout: tip.checkout}
	if tree == tip.tree {
		res.Empty = true
		return res, nil
	}
	if res.Commit, err = m.Git.Input(ctx, strings.NewReader(o.Message), "commit-tree", tree, "-p", tip.commit, "-F", "-"); err != nil {
		return res, fmt.Errorf("create squash commit: %w", err)
	}
	if o.Remote != "" {
		if err := m.Remote(o.Remote).pushLanding(ctx, o, res.Commit, tip.commit, head); err != nil {
			return LandResult{}, err
		}
	}
	err = m.fastForward(ctx, o.Target, tip, res.Commit, "norma: land "+o.TaskBranch)
	if err != nil && o.Remote != "" {
		// The landing is on the remote all the same; the local target follows it later.
		res.LocalBehind, err = err.Error(), nil
	}
	return res, err
}

// fastForward moves branch from tip to commit: through its checkout, or by compare-and-swap.
func (m *Manager) fastForward(ctx context.Context, branch string, tip branchState, commit, msg string) error {
	if tip.checkout != "" {
		return m.fastForwardCheckout(ctx, tip.checkout, commit)
	}
	if err := m.Git.Run(ctx, "update-ref", "-m", msg, "refs/heads/"+branch, commit, tip.commit); err != nil {
		return &LandError{Err: ErrTargetMoved, Detail: strings.TrimSpace(errStderr(err))}
	}
	return nil
}

// branchState is a branch's commit, its tree and the worktree that has it checked out (see
// checkoutOf: branchTip leaves it to the callers that move the branch).
type branchState struct {
	commit, tree, checkout string
}

// branchTip reads the branch's commit and tree with one git call. (Not git's
// %(worktreepath): it takes a run worktree's word for what is checked out there.)
func (m *Manager) branchTip(ctx context.Context, branch string) (branchState, error) {
	out, err := m.Git.Output(ctx, "for-each-ref", "--format=%(objectname) %(tree)", "refs/heads/"+branch)
	if err != nil {
		return branchState{}, fmt.Errorf("read target branch %s: %w", branch, err)
	}
	fields := strings.SplitN(out, " ", 2)
	if len(fields) < 2 || fields[0] == "" {
		return branchState{}, fmt.Errorf("target branch %s does not exist", branch)
	}
	return branchState{commit: fields[0], tree: fields[1]}, nil
}

// LandedRef reports whether ref (a task branch, a kept branch) adds nothing to target any
// more: merging it leaves target's tree as it is (its work landed, squashed or not).
func (m *Manager) LandedRef(ctx context.Context, target, ref string) (bool, error) {
	tip, err := m.branchTip(ctx, target)
	if err != nil {
		return false, err
	}
	tree, err := m.mergeTree(ctx, tip.commit, ref)
	if err != nil {
		return false, err
	}
	return tree == tip.tree, nil
}

// LandedAt says commit is a landing of ref: merging ref into its first parent gives its tree.
// A commit that only says so (its trailers) is not.
func (m *Manager) LandedAt(ctx context.Context, commit, ref string) (bool, error) {
	out, err := m.Git.Output(ctx, "rev-parse", commit+"^1", commit+"^{tree}")
	if err != nil {
		return false, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return false, fmt.Errorf("read the parent and tree of %s: %q", commit, out)
	}
	tree, err := m.mergeTree(ctx, f[0], ref)
	if errors.Is(err, ErrConflict) {
		return false, nil
	}
	return err == nil && tree == f[1], err
}

// mergeTree merges branch into target in object space: the tree, or a *LandError (conflicts).
func (m *Manager) mergeTree(ctx context.Context, target, branch string) (string, error) {
	out, err := m.Git.Output(ctx, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", target, branch)
	fields := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	switch {
	case err == nil:
		return fields[0], nil
	case git.ExitCodeOf(err) == 1:
		return "", &LandError{Err: ErrConflict, Paths: uniq(fields[1:])}
	default:
		return "", fmt.Errorf("merge %s into %s: %w", branch, target, err)
	}
}

// fastForwardCheckout advances a checked-out target through git. --no-autostash: a
// merge.autoStash would stash overlapping edits, move the target anyway and leave conflict
// markers in your files. --no-overwrite-ignore: git takes ignored files (.env) as expendable,
// and a task turning their directory into a file or symlink would delete them.
func (m *Manager) fastForwardCheckout(ctx context.Context, dir, commit string) error {
	var err error
	g := m.Git.In(dir)
	g.Confine = m.CheckoutGit
	for wait := indexLockWait; ; wait -= indexLockPoll {
		err = g.Run(ctx, "merge", "--ff-only", "--no-autostash", "--no-overwrite-ignore", "-q", "--no-stat", commit)
		if err == nil {
			return nil
		}
		// A git command of the user's holds the checkout's index for a moment (a commit, a
		// status): wait for it rather than refuse a landing that is otherwise fine.
		if !strings.Contains(errStderr(err), "index.lock") || wait <= 0 || Sleep(ctx, indexLockPoll) != nil {
			break
		}
	}
	stderr := errStderr(err)
	if paths := overwrittenPaths(stderr); len(paths) > 0 {
		return &LandError{Err: ErrDirtyOverlap, Paths: paths}
	}
	if strings.Contains(stderr, "Not possible to fast-forward") || strings.Contains(stderr, "not possible to fast-forward") {
		return &LandError{Err: ErrTargetMoved, Detail: strings.TrimSpace(stderr)}
	}
	return &LandError{Err: ErrCheckoutBusy, Detail: firstLine(stderr)}
}

// How long a landing waits for another git command to release the checkout's index.
const (
	indexLockWait = 2 * time.Second
	indexLockPoll = 100 * time.Millisecond
)

// Sleep waits d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// firstLine is the gist of a git message, for a refusal that has to fit on one line.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(strings.TrimPrefix(line, "fatal: "), "error: ")
}

// overwrittenPaths reads the tab-indented path list of git's "would be overwritten" error.
func overwrittenPaths(stderr string) []string {
	if !strings.Contains(stderr, "would be overwritten") && !strings.Contains(stderr, "would be removed") &&
		!strings.Contains(stderr, "would lose untracked files") {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "\t") {
			paths = append(paths, strings.TrimSpace(line))
		}
	}
	return paths
}

// errStderr is what git printed on stderr for the failed command err, or err's own message.
func errStderr(err error) string { return cmp.Or(git.StderrOf(err), err.Error()) }

// uniq is s without empty strings and repeats, in order.
func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
