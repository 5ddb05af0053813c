package gitnorma

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/hooks"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// HooksDir is where git runs hooks from (honours core.hooksPath; shared by all worktrees).
func (r *Repo) HooksDir(ctx context.Context) (string, error) {
	dir, err := r.Git.GitPath(ctx, "hooks")
	return dir, withKind(ErrEnvironment, err)
}

// InstallHooks writes git-norma's hook blocks (see hooks.Install).
func (r *Repo) InstallHooks(ctx context.Context, force bool) ([]hooks.Action, error) {
	dir, err := r.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	actions, err := hooks.Install(dir, force)
	if taken := (*hooks.AsideTakenError)(nil); errors.As(err, &taken) {
		err = failf(fmt.Sprintf("compare the two; if you no longer need %s: rm %s, then git norma hooks install --force again", filepath.Base(taken.Aside), taken.Aside), "%v", err)
	}
	// core.hooksPath in the work tree (.husky, say, often tracked): what install wrote is a
	// change to your project, which git status shows.
	if rel, relErr := filepath.Rel(r.Root, dir); relErr == nil && filepath.IsLocal(rel) && !strings.HasPrefix(filepath.ToSlash(rel), ".git/") {
		for i, a := range actions {
			if a.Result == "created" || a.Result == "chained" || a.Result == "upgraded" {
				note := fmt.Sprintf("%s is in your work tree (core.hooksPath): git status shows the change; commit it to share the hook with your team, or leave it out of your commits",
					filepath.ToSlash(filepath.Join(rel, a.Hook)))
				actions[i].Detail = strings.TrimPrefix(actions[i].Detail+"; "+note, "; ")
			}
		}
	}
	return actions, err
}

// UninstallHooks removes git-norma's hook blocks, leaving everything else as it was.
func (r *Repo) UninstallHooks(ctx context.Context) ([]hooks.Action, error) {
	dir, err := r.HooksDir(ctx)
	if err != nil {
		return nil, err
	}
	return hooks.Uninstall(dir)
}

// HookHandler is the application's side of the hooks run in the work tree dir: it checks
// commits, and gates merges and pushes on the recorded verdicts. Its one-line notes go to out.
func (a *App) HookHandler(dir string, out io.Writer) hooks.Handler {
	return &hookHandler{a: a, dir: dir, git: a.Repo.Git.In(dir), out: out}
}

type hookHandler struct {
	a   *App
	dir string
	git git.Runner
	out io.Writer
}

// Committed handles a commit in a norma/task/* worktree: its checks run in the background (the
// commit is never held up), or right here with wait, their result recorded in the store and as
// a note on the commit. Without a config that loads it says so in one line.
func (h *hookHandler) Committed(ctx context.Context, wait bool) error {
	if os.Getenv(loop.StepDirEnv) != "" {
		// An agent's own commit, inside a step: the step's Check verifies the work, and a
		// check in the background would run git in the workspace while git-norma does.
		return nil
	}
	branch, _ := h.git.CurrentBranch(ctx)
	task, ok := strings.CutPrefix(branch, worktree.BranchPrefix)
	if h.a.configErr != nil {
		if ok && task != "" {
			fmt.Fprintf(h.out, "git-norma: this commit on %s was not checked: %s\n", branch, oneLine(h.a.configErr))
		}
		return nil
	}
	if !ok || h.a.ValidateTaskID(task) != nil {
		return nil
	}
	head, _ := h.git.ShortID(ctx, "HEAD")
	if wait {
		rep, err := h.a.check(ctx, h.dir, task, false)
		if err == nil {
			fmt.Fprintf(h.out, "git-norma: %s at %s: %s\n", task, head, rep.Verdict)
		}
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "hook", "post-commit")
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), hooks.WaitEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the commit, apart from its terminal
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = cmd.Process.Release()
	fmt.Fprintf(h.out, "git-norma: checking %s at %s in the background; see: git norma status %s  (or git notes --ref=norma show %s)\n", task, head, task, head)
	return nil
}

// Merging refuses a hand-made merge that brings in task work no recorded PASS covers (see
// hooks.Gate.Refused).
func (h *hookHandler) Merging(ctx context.Context, merged []string, concluding string) error {
	gate, done := h.gate()
	defer done()
	// What the remote this branch pulls from has of the target was published (a teammate's
	// verified work, pulled): it is judged where it was made, not again here.
	from := h.pullRemote(ctx)
	refused, err := gate.Refused(ctx, merged, append([]string{"HEAD"}, gate.Published(ctx, from)...))
	if err != nil {
		refused = append(refused, fmt.Sprintf("cannot tell which commits the merge brings in (%v)", err))
	}
	err = h.refusal("merge", concluding, refused)
	var e *Error
	if errors.As(err, &e) && len(refused) > 0 {
		if on := gate.PublishedElsewhere(ctx, merged, from); on != "" {
			branch, _ := h.git.CurrentBranch(ctx)
			// Which remote's landings count as verified is the user's choice: say how to make it.
			e.Hint = fmt.Sprintf("all of it is on %s, which %s does not pull from: if what lands there is verified by its own users, make %s pull from it (git branch -u %s) and pull again; or ",
				on, branch, branch, on) + e.Hint
		}
	}
	return err
}

// Pushing refuses a task branch whose head has no recorded PASS, or any ref whose new commits
// carry task work no recorded PASS covers; then pushes the journal notes (notes.push).
func (h *hookHandler) Pushing(ctx context.Context, remote string, updates []hooks.PushUpdate) error {
	gate, done := h.gate()
	defer done()
	var refused []string
	for _, u := range updates {
		if u.Deletes() {
			continue
		}
		if id := gate.TaskOf(u.LocalRef); id != "" {
			if why := gate.Unverified(ctx, id, u.LocalID); why != "" {
				refused = append(refused, why)
				continue
			}
			// Its PASS covers its own work, not another task's that the branch carries (one
			// it forked from, fast-forwarded into main): that is judged as on any ref.
		}
		over := gate.PushedOver(ctx, remote, u)
		// What the merge gate let in as published (the target as the remote the branch pulls
		// from has it) was judged there: it goes on to a fork or a new remote as it is.
		if from := h.upstreamRemoteOf(ctx, u.LocalRef); from != remote {
			over = append(over, gate.Published(ctx, from)...)
		}
		why, err := gate.Refused(ctx, []string{u.LocalID}, over)
		if err != nil && h.git.HasCommit(ctx, u.LocalID) {
			why = append(why, fmt.Sprintf("%s: cannot tell which commits the push adds (%v)", u.LocalRef, err))
		}
		refused = append(refused, why...)
	}
	if err := h.refusal("push", "push", refused); err != nil {
		return err
	}
	if h.a.configErr != nil && !h.a.uninitialised {
		fmt.Fprintf(h.out, "git-norma: the journal notes were not pushed: %s\n", oneLine(h.a.configErr))
	}
	if h.a.Config.Notes.Push && remote != "" {
		if err := h.a.Repo.NotesJournal().Push(ctx, remote); err != nil {
			fmt.Fprintf(h.out, "git-norma: could not push the journal notes: %v\n", err)
		} else {
			fmt.Fprintf(h.out, "git-norma: pushed %s to %s\n", notes.Ref, remote)
		}
	}
	return nil
}

// gate is the hooks' gate over this repository's records; done closes the store it opened.
func (h *hookHandler) gate() (hooks.Gate, func()) {
	r := &gateRecords{a: h.a}
	// The configured target only: the branch you happen to have checked out says nothing of
	// what a remote judged.
	return hooks.Gate{Git: h.git, Records: r, BranchPrefix: worktree.BranchPrefix, Target: h.a.Config.TargetBranch}, r.close
}

// pullRemote is the remote the checked-out branch pulls from (origin when it says none).
func (h *hookHandler) pullRemote(ctx context.Context) string {
	if branch, err := h.git.CurrentBranch(ctx); err == nil && branch != "" {
		if remote := h.branchRemote(ctx, branch); remote != "" {
			return remote
		}
	}
	return "origin"
}

// upstreamRemoteOf is the remote the pushed local ref pulls from: its branch's upstream, or for
// anything else (HEAD, a tag) the checked-out branch's; origin when that names none (pullRemote).
func (h *hookHandler) upstreamRemoteOf(ctx context.Context, ref string) string {
	if branch, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		return cmp.Or(h.branchRemote(ctx, branch), "origin")
	}
	return h.pullRemote(ctx)
}

// branchRemote is the remote branch pulls from ("" when it names none, or itself: ".").
func (h *hookHandler) branchRemote(ctx context.Context, branch string) string {
	remote, err := h.git.Config(ctx, "branch."+branch+".remote")
	if remote = strings.TrimSpace(remote); err != nil || remote == "." {
		return ""
	}
	return remote
}

// gateRecords are the task branches and the run store as the gate reads them; the store is
// opened on first use, never created (a repository never initialised, or whose .norma/ was
// removed, has no record).
type gateRecords struct {
	a      *App
	st     *store.Store
	opened bool
	err    error
}

func (r *gateRecords) TaskBranches(ctx context.Context) ([]hooks.Branch, error) {
	rows, err := r.a.Repo.taskBranches(ctx)
	branches := make([]hooks.Branch, len(rows))
	for i, b := range rows {
		branches[i] = hooks.Branch{Task: b.Task, Head: b.Head}
	}
	return branches, err
}

// Runs are the task's 50 latest runs: a PASS older than that is not what anyone pushes.
func (r *gateRecords) Runs(ctx context.Context, task string) ([]hooks.Run, error) {
	if !r.opened {
		r.opened = true
		if _, err := os.Stat(r.a.Repo.Path("norma.db")); err != nil {
			r.err = errors.New("no run is recorded here: " + filepath.Join(".norma", "norma.db") + " is missing")
		} else if r.st, err = r.a.Repo.OpenStore(ctx); err != nil {
			r.err = fmt.Errorf("cannot read the run store: %v", err)
		} else if why := storeDistrust(ctx, r.st, r.a.confiner().shieldsNow()); why != "" {
			// A PASS the store holds is evidence only when no agent could have written it.
			r.err = fmt.Errorf("a PASS read from the run store is only a hint: %s; land the task with git norma land, which checks it again, or vouch for every record there: git norma resume --trust-store", why)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	runs, err := r.st.RunsForTask(ctx, task, 0) // however many checks of the task came since
	if err != nil {
		return nil, fmt.Errorf("cannot read the run store: %v", err)
	}
	out := make([]hooks.Run, len(runs))
	for i, run := range runs {
		out[i] = hooks.Run{ID: run.ID, Verdict: run.Verdict, Passed: run.Status == store.StatusPassed, Head: run.Head, PassHead: run.PassHead}
	}
	return out, nil
}

func (r *gateRecords) close() {
	if r.st != nil {
		r.st.Close()
	}
}

// refusal refuses to do what (merge, push) with the refused commits; bypass is the git command
// that does it anyway with --no-verify.
func (h *hookHandler) refusal(what, bypass string, refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	hint := "verify it: git norma check <task> in a worktree of yours on its branch, or git norma run <task> --no-land"
	if h.a.uninitialised {
		hint = "git-norma is not initialised here, so no PASS is on record: git norma init, then verify it (git norma check or run); or remove these checks: git norma hooks uninstall"
	}
	if what == "merge" {
		hint += "; meanwhile: git merge --abort (after a --squash: git reset --merge, which also drops whatever else is staged;" +
			" a squash given up already leaves its message behind, which git would reuse: rm \"$(git rev-parse --git-path SQUASH_MSG)\")"
	}
	return &Error{
		Err:  fmt.Errorf("refusing to %s unverified work:\n  %s", what, strings.Join(refused, "\n  ")),
		Hint: hint + "; to " + what + " anyway, deliberately: git " + bypass + " --no-verify"}
}

// oneLine is an error and its hint on one line, for a hook that only warns.
func oneLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	var e *Error
	if errors.As(err, &e) && e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}
