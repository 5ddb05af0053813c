package gitnorma

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/hooks"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// HooksDir is where git runs hooks from (honours core.hooksPath; shared by all worktrees).
func (a *App) HooksDir(ctx context.Context) (string, error) {
	dir, err := a.Repo.Git.Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	return dir, withCode(ExitFatal, err)
}

// InstallHooks writes git-norma's hook blocks (see hooks.Install).
func (a *App) InstallHooks(ctx context.Context, force bool) ([]hooks.Action, error) {
	dir, err := a.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	actions, err := hooks.Install(dir, force)
	return actions, withCode(ExitFail, err)
}

// UninstallHooks removes git-norma's hook blocks, leaving everything else as it was.
func (a *App) UninstallHooks(ctx context.Context) ([]hooks.Action, error) {
	dir, err := a.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	actions, err := hooks.Uninstall(dir)
	return actions, withCode(ExitFail, err)
}

// taskOfWorktree returns the task whose branch is checked out in dir ("" if none).
func (a *App) taskOfWorktree(ctx context.Context, dir string) string {
	branch, _ := a.Repo.Git.In(dir).Output(ctx, "symbolic-ref", "-q", "--short", "HEAD")
	if id := strings.TrimPrefix(branch, worktree.BranchPrefix); id != branch && a.ValidateTaskID(id) == nil {
		return id
	}
	return ""
}

// HookWaitEnv makes the post-commit hook check in the foreground (set for its own background
// job, and by tests that need the result before going on).
const HookWaitEnv = "GIT_NORMA_HOOK_WAIT"

// HookPostCommit handles a commit in a norma/task/* worktree: its checks run in the background
// (the commit is never held up) and their result is recorded in the store and as a note on the
// commit. With wait, the check runs right here.
func (a *App) HookPostCommit(ctx context.Context, dir string, wait bool, out io.Writer) error {
	task := a.taskOfWorktree(ctx, dir)
	if task == "" {
		return nil
	}
	head, _ := a.Repo.Git.In(dir).Output(ctx, "rev-parse", "--short", "HEAD")
	if wait {
		rep, err := a.Check(ctx, dir, task)
		if err == nil {
			fmt.Fprintf(out, "git-norma: %s at %s: %s\n", task, head, rep.Verdict)
		}
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "hook", "post-commit")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), HookWaitEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the commit, apart from its terminal
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = cmd.Process.Release()
	fmt.Fprintf(out, "git-norma: checking %s at %s in the background; see: git norma status %s  (or git notes --ref=norma show %s)\n", task, head, task, head)
	return nil
}

// HookPreMergeCommit refuses a hand-made merge of a task branch whose head has no recorded
// PASS. It serves pre-merge-commit (git exports GITHEAD_<sha> for what it merges) and
// pre-commit (the commit that concludes a merge after conflicts, with MERGE_HEAD written).
func (a *App) HookPreMergeCommit(ctx context.Context, dir string, env []string) error {
	var refused []string
	for _, sha := range a.mergedCommits(ctx, dir, env) {
		for _, task := range a.taskBranchesAt(ctx, sha) {
			if why := a.unverified(ctx, task, sha); why != "" {
				refused = append(refused, why)
			}
		}
	}
	return refusal("merge", refused)
}

// mergedCommits lists the commits a merge in progress brings in.
func (a *App) mergedCommits(ctx context.Context, dir string, env []string) []string {
	var shas []string
	for _, kv := range env {
		if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "GITHEAD_") {
			shas = append(shas, strings.TrimPrefix(name, "GITHEAD_"))
		}
	}
	if path, err := a.Repo.Git.In(dir).Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", "MERGE_HEAD"); err == nil {
		if data, err := os.ReadFile(path); err == nil {
			shas = append(shas, strings.Fields(string(data))...)
		}
	}
	return shas
}

// HookPrePush refuses to push a task branch, or a branch containing a task branch's head,
// unless that head has a recorded PASS; then pushes the journal notes when notes.push is on.
func (a *App) HookPrePush(ctx context.Context, dir, remote string, stdin io.Reader, out io.Writer) error {
	updates, err := hooks.ParsePrePush(stdin)
	if err != nil {
		return withCode(ExitFail, err)
	}
	var refused []string
	for _, u := range updates {
		if u.Deletes() {
			continue
		}
		for _, task := range a.pushedTaskHeads(ctx, dir, u) {
			if why := a.unverified(ctx, task.id, task.head); why != "" {
				refused = append(refused, why)
			}
		}
	}
	if err := refusal("push", refused); err != nil {
		return err
	}
	if a.Config.Notes.Push && remote != "" {
		if err := a.NotesJournal().Push(ctx, remote); err != nil {
			fmt.Fprintf(out, "git-norma: could not push the journal notes: %v\n", err)
		} else {
			fmt.Fprintf(out, "git-norma: pushed %s to %s\n", notes.Ref, remote)
		}
	}
	return nil
}

type taskHead struct{ id, head string }

// pushedTaskHeads lists the task branch heads a push update carries: the task branch itself,
// or task heads newly contained in what the update pushes through a merge (a hand-made merge
// brings a task head in as a second parent; a head on the branch's own first-parent line is
// just the commit a task branch forked from).
func (a *App) pushedTaskHeads(ctx context.Context, dir string, u hooks.PushUpdate) []taskHead {
	g := a.Repo.Git.In(dir)
	if id := strings.TrimPrefix(u.LocalRef, "refs/heads/"+worktree.BranchPrefix); id != u.LocalRef {
		return []taskHead{{id, u.LocalID}}
	}
	branches, err := a.taskBranches(ctx)
	if err != nil {
		return nil
	}
	rng := []string{"rev-list", "--first-parent", u.LocalID}
	if !hooks.ZeroID(u.RemoteID) {
		rng = append(rng, "^"+u.RemoteID)
	}
	line, _ := g.Output(ctx, rng...)
	own := map[string]bool{}
	for _, c := range strings.Fields(line) {
		own[c] = true
	}
	var out []taskHead
	for _, b := range branches {
		if own[b.Head] || g.Run(ctx, "merge-base", "--is-ancestor", b.Head, u.LocalID) != nil {
			continue
		}
		if !hooks.ZeroID(u.RemoteID) && g.Run(ctx, "merge-base", "--is-ancestor", b.Head, u.RemoteID) == nil {
			continue // already on the remote
		}
		out = append(out, taskHead{b.Task, b.Head})
	}
	return out
}

// taskBranchesAt lists the tasks whose branch head is sha.
func (a *App) taskBranchesAt(ctx context.Context, sha string) []string {
	out, err := a.Repo.Git.Output(ctx, "for-each-ref", "--points-at", sha, "--format=%(refname:short)", "refs/heads/"+worktree.BranchPrefix)
	if err != nil {
		return nil
	}
	var tasks []string
	for _, b := range strings.Fields(out) {
		tasks = append(tasks, strings.TrimPrefix(b, worktree.BranchPrefix))
	}
	return tasks
}

// unverified says why task's commit sha is not verified ("" when a run or a clean-worktree
// check recorded a PASS for exactly that commit).
func (a *App) unverified(ctx context.Context, task, sha string) string {
	st, err := a.OpenStore(ctx)
	if err != nil {
		return fmt.Sprintf("norma/task/%s: cannot read the run store (%v)", task, err)
	}
	defer st.Close()
	runs, _ := st.RunsForTask(ctx, task, 50)
	last := "never checked"
	for _, r := range runs {
		kv, err := st.KV(ctx, r.ID)
		if err != nil {
			continue
		}
		var passHead, head string
		_ = json.Unmarshal(kv["pass_head"], &passHead)
		_ = json.Unmarshal(kv["head"], &head)
		if r.Status == store.StatusPassed && passHead == sha {
			return ""
		}
		if last == "never checked" && (head == sha || passHead == sha) {
			last = fmt.Sprintf("last verdict %s (run %s)", orDash(r.Verdict), r.ID)
		}
	}
	return fmt.Sprintf("norma/task/%s at %.10s has no recorded PASS (%s)", task, sha, last)
}

func refusal(what string, refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	return &Error{Code: ExitFail,
		Err: fmt.Errorf("refusing to %s unverified work:\n  %s", what, strings.Join(refused, "\n  ")),
		Hint: "verify it: git norma check <task> in the task's worktree, or git norma run <task> --no-land" + undo(what) +
			"; to " + what + " anyway, deliberately: git " + what + " --no-verify"}
}

func undo(what string) string {
	if what == "merge" {
		return "; meanwhile: git merge --abort"
	}
	return ""
}
