package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Workspace is one run's worktree on its task branch.
type Workspace struct {
	dir    string
	branch string
	taskID string
	runID  string
	// base is where the task branch forks from the target; patch sizes are measured from it.
	base string
	git  git.Runner
	// CaughtUp is what bringing the existing branch up to date with the target did.
	CaughtUp CatchUp
}

// Dir is the worktree's absolute path.
func (w *Workspace) Dir() string { return w.dir }

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
)

// State reads HEAD and the status fingerprint.
func (w *Workspace) State(ctx context.Context) (State, error) {
	head, err := w.git.Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		return State{}, err
	}
	status, err := w.status(ctx)
	if err != nil {
		return State{}, err
	}
	sum := sha256.Sum256([]byte(status))
	return State{Head: head, Status: hex.EncodeToString(sum[:])}, nil
}

func (w *Workspace) status(ctx context.Context) (string, error) {
	return w.git.Output(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none")
}

// Changes lists what differs from an earlier state: a moved HEAD and every changed path.
func (w *Workspace) Changes(ctx context.Context, since State) ([]string, error) {
	now, err := w.State(ctx)
	if err != nil || now == since {
		return nil, err
	}
	var changes []string
	if now.Head != since.Head {
		changes = append(changes, fmt.Sprintf("HEAD moved from %.10s to %.10s", since.Head, now.Head))
	}
	status, err := w.status(ctx)
	if err != nil {
		return nil, err
	}
	entries := strings.Split(status, "\x00")
	for i := 0; i < len(entries); i++ {
		entry := entries[i]
		if len(entry) <= 3 {
			continue
		}
		changes = append(changes, entry[3:])
		// With -z a rename or copy is followed by its source path as a field of its own,
		// without the "XY " status prefix.
		if (entry[0] == 'R' || entry[0] == 'C' || entry[1] == 'R' || entry[1] == 'C') && i+1 < len(entries) {
			i++
			if entries[i] != "" {
				changes = append(changes, entries[i])
			}
		}
	}
	return changes, nil
}

// Discard returns the worktree to the state's commit, dropping uncommitted files. It is only
// ever used on a run's own worktree, after a read-only step dirtied it.
func (w *Workspace) Discard(ctx context.Context, to State) error {
	if w.branch != "" {
		// Re-attach HEAD to the task branch first: if the step switched branches, the reset
		// below must move the task branch, never whatever branch the agent left checked out.
		if err := w.git.Run(ctx, "symbolic-ref", "HEAD", "refs/heads/"+w.branch); err != nil {
			return err
		}
	}
	if err := w.git.Run(ctx, "reset", "-q", "--hard", to.Head); err != nil {
		return err
	}
	return w.git.Run(ctx, "clean", "-fdq")
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
}

// Commit commits everything a writing step changed since `since`, as the orchestrator. Commits
// the agent made itself on top of `since` are folded into this one; a switched branch or
// rewritten history is refused (ErrBranchSwitched, ErrHistoryRewritten).
func (w *Workspace) Commit(ctx context.Context, since State, sc StepCommit) (CommitResult, error) {
	res := CommitResult{}
	if ref, err := w.git.Output(ctx, "symbolic-ref", "-q", "HEAD"); err != nil || ref != "refs/heads/"+w.branch {
		return res, fmt.Errorf("%w (HEAD is %q, want %s)", ErrBranchSwitched, ref, w.branch)
	}
	head, err := w.git.Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		return res, err
	}
	if head != since.Head {
		if res.AgentCommits, err = w.foldAgentCommits(ctx, since.Head, head); err != nil {
			return res, err
		}
	}
	if err := w.git.Run(ctx, "add", "-A"); err != nil {
		return res, err
	}
	if err := w.git.Run(ctx, "diff", "--cached", "--quiet"); err == nil {
		res.Commit = since.Head
	} else if git.ExitCodeOf(err) != 1 {
		return res, err
	} else {
		msg := stepMessage(w.taskID, w.runID, sc)
		if _, err := w.git.Input(ctx, strings.NewReader(msg), "commit", "-q", "--no-verify", "-F", "-"); err != nil {
			return res, err
		}
		if res.Commit, err = w.git.Output(ctx, "rev-parse", "HEAD"); err != nil {
			return res, err
		}
		res.Changed = true
	}
	res.PatchBytes, err = w.patchBytes(ctx)
	return res, err
}

// foldAgentCommits soft-resets agent-made commits so their content lands in the orchestrator
// commit; only descendants of the step's starting point are accepted.
func (w *Workspace) foldAgentCommits(ctx context.Context, from, to string) (int, error) {
	if err := w.git.Run(ctx, "merge-base", "--is-ancestor", from, to); err != nil {
		if git.ExitCodeOf(err) == 1 {
			return 0, fmt.Errorf("%w: %.10s is not an ancestor of %.10s (the agent must not reset, rebase or amend)", ErrHistoryRewritten, from, to)
		}
		return 0, err
	}
	count, err := w.git.Output(ctx, "rev-list", "--count", from+".."+to)
	if err != nil {
		return 0, err
	}
	if err := w.git.Run(ctx, "reset", "-q", "--soft", from); err != nil {
		return 0, err
	}
	var n int
	fmt.Sscan(count, &n)
	return n, nil
}

// rescue commits whatever is uncommitted (an interrupted step's work) so removing the
// worktree loses nothing.
func (w *Workspace) rescue(ctx context.Context) error {
	status, err := w.status(ctx)
	if err != nil || status == "" {
		return err
	}
	if err := w.git.Run(ctx, "add", "-A"); err != nil {
		return err
	}
	msg := fmt.Sprintf("chore(norma): keep uncommitted changes of run %s\n\nThe run ended before its orchestrator commit; these changes were saved instead of discarded.\n\nNorma-Run: %s\n", w.runID, w.runID)
	_, err = w.git.Input(ctx, strings.NewReader(msg), "commit", "-q", "--no-verify", "-F", "-")
	return err
}

// patchBytes is the size of the task's whole diff against its base, counted as it streams.
func (w *Workspace) patchBytes(ctx context.Context) (int64, error) {
	var c countingWriter
	err := w.git.Stream(ctx, &c, "diff", "--binary", "--no-color", "--no-ext-diff", w.base, "HEAD")
	return int64(c), err
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// stepMessage is an orchestrator step commit: a Conventional Commit header, the step summary,
// and trailers that `git interpret-trailers --parse` lists.
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
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = word
			continue
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
