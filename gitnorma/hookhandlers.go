package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// commit. With wait, the check runs right here. Without a config to check with (git-norma not
// initialised, or a config that does not load) it says so in one line.
func (a *App) HookPostCommit(ctx context.Context, dir string, wait bool, out io.Writer) error {
	if os.Getenv(loop.StepDirEnv) != "" {
		// An agent's own commit, inside a step: the step's Check verifies the work, and a
		// check in the background would run git in the workspace while git-norma does.
		return nil
	}
	if a.configErr != nil {
		branch, _ := a.Repo.Git.In(dir).Output(ctx, "symbolic-ref", "-q", "--short", "HEAD")
		if task, ok := strings.CutPrefix(branch, worktree.BranchPrefix); ok && task != "" {
			fmt.Fprintf(out, "git-norma: this commit on %s was not checked: %s\n", branch, oneLine(a.configErr))
		}
		return nil
	}
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

// HookPreMergeCommit refuses a hand-made merge that brings in task work no recorded PASS
// covers (see refusedWork). It serves pre-merge-commit (git exports GITHEAD_<sha> for what it
// merges) and pre-commit (the commit that concludes a merge after conflicts, with MERGE_HEAD
// written).
func (a *App) HookPreMergeCommit(ctx context.Context, dir string, env []string) error {
	merged := a.mergedCommits(ctx, dir, env)
	if len(merged) == 0 {
		return nil
	}
	// What a remote-tracking branch already has was published (a teammate's verified work,
	// pulled): it is judged where it was made, not again here.
	refused, err := a.refusedWork(ctx, a.Repo.Git.In(dir), merged, append([]string{"HEAD"}, publishedRefs...))
	if err != nil {
		refused = append(refused, fmt.Sprintf("cannot tell which commits the merge brings in (%v)", err))
	}
	return a.refusal("merge", refused)
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

// HookPrePush refuses to push a task branch whose head has no recorded PASS, or any other ref
// whose new commits carry task work no recorded PASS covers (see refusedWork); then pushes the
// journal notes when notes.push is on.
func (a *App) HookPrePush(ctx context.Context, dir, remote string, stdin io.Reader, out io.Writer) error {
	updates, err := hooks.ParsePrePush(stdin)
	if err != nil {
		return withCode(ExitFail, err)
	}
	g := a.Repo.Git.In(dir)
	var refused []string
	for _, u := range updates {
		if u.Deletes() {
			continue
		}
		if id := strings.TrimPrefix(u.LocalRef, "refs/heads/"+worktree.BranchPrefix); id != u.LocalRef {
			if why := a.unverified(ctx, id, u.LocalID); why != "" {
				refused = append(refused, why)
			}
			continue
		}
		why, err := a.refusedWork(ctx, g, []string{u.LocalID}, pushedOver(ctx, g, u))
		if err != nil && g.Run(ctx, "rev-parse", "--verify", "-q", u.LocalID+"^{commit}") == nil {
			why = append(why, fmt.Sprintf("%s: cannot tell which commits the push adds (%v)", u.LocalRef, err))
		}
		refused = append(refused, why...)
	}
	if err := a.refusal("push", refused); err != nil {
		return err
	}
	if a.configErr != nil && !a.uninitialised {
		fmt.Fprintf(out, "git-norma: the journal notes were not pushed: %s\n", oneLine(a.configErr))
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

// pushedOver is what a push update builds on (rev-list arguments after --not): the remote
// ref's current commit when it is known here; for a new ref, or one whose remote commit was
// never fetched, whatever a remote-tracking branch already has (task branches pushed before
// do not count as published).
func pushedOver(ctx context.Context, g git.Runner, u hooks.PushUpdate) []string {
	if !hooks.ZeroID(u.RemoteID) && g.Run(ctx, "cat-file", "-e", u.RemoteID+"^{commit}") == nil {
		return []string{u.RemoteID}
	}
	return publishedRefs
}

// publishedRefs are the rev-list arguments for what others can already see: the
// remote-tracking branches, but for task branches pushed to share work in progress.
var publishedRefs = []string{"--exclude=*/" + worktree.BranchPrefix + "*", "--remotes"}

// stepTrailers is the rev-list format that prints each commit with its Norma-Task and
// Norma-Role trailers: an orchestrator step commit carries both (a landing commit has no
// Norma-Role).
const stepTrailers = "--format=%H%x1f%(trailers:key=Norma-Task,key=Norma-Role,separator=%x1f)"

// refusedWork finds the task work among the commits reachable from tips and not from over
// (rev-list arguments), and lists, one line per task, the work no recorded PASS covers.
//
// A commit is a task's work when git-norma made it for the task (a step commit, by its
// trailers) or git made it on the task's branch (the branch's reflog records it as anything
// but the branch's creation, a reset or a fast-forward), and so is the branch's head when the
// reflog does not say how it got there. What a task branch forked from, or was fast-forwarded
// or reset to, is not its work: your own commits push. The work is covered when it is, or
// is reachable from, a commit with a recorded PASS of that task among the same commits. Only
// the new commits are walked, never the whole history.
func (a *App) refusedWork(ctx context.Context, g git.Runner, tips, over []string) ([]string, error) {
	args := append([]string{"rev-list", "--topo-order", stepTrailers}, tips...)
	out, err := g.Output(ctx, append(append(args, "--not"), over...)...)
	if err != nil {
		return nil, err
	}
	order := map[string]int{}            // the new commits, newest first
	work := map[string]map[string]bool{} // task -> its work among them
	add := func(task, sha string) {
		if work[task] == nil {
			work[task] = map[string]bool{}
		}
		work[task][sha] = true
	}
	for _, line := range strings.Split(out, "\n") {
		sha, trailers, ok := strings.Cut(line, "\x1f")
		if !ok {
			continue // rev-list's "commit <sha>" line
		}
		order[sha] = len(order)
		if task := stepCommitTask(trailers); task != "" {
			add(task, sha)
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	branches, err := a.taskBranches(ctx)
	if err != nil {
		return nil, err
	}
	made, seen := madeOnTaskBranches(ctx, g, len(branches))
	for _, b := range branches {
		for _, sha := range made[b.Task] {
			if _, ok := order[sha]; ok {
				add(b.Task, sha)
			}
		}
		if _, ok := order[b.Head]; ok && !seen[b.Task][b.Head] {
			add(b.Task, b.Head)
		}
	}
	if len(work) == 0 {
		return nil, nil
	}
	records := a.loadVerdicts(ctx)
	defer records.close()
	tasks := slices.Sorted(maps.Keys(work))
	var refused []string
	for _, task := range tasks {
		v := records.of(ctx, task)
		covered := map[string]bool{}
		var passed []string
		for _, p := range v.passHeads {
			if _, ok := order[p]; ok {
				passed = append(passed, p)
			}
		}
		if len(passed) > 0 {
			below, err := g.Output(ctx, append(append(append([]string{"rev-list"}, passed...), "--not"), over...)...)
			if err != nil {
				return nil, err
			}
			for _, c := range strings.Fields(below) {
				covered[c] = true
			}
		}
		var open []string
		for sha := range work[task] {
			if !covered[sha] {
				open = append(open, sha)
			}
		}
		if len(open) == 0 {
			continue
		}
		slices.SortFunc(open, func(x, y string) int { return order[x] - order[y] })
		refused = append(refused, v.why(task, open[0]))
	}
	return refused, nil
}

// stepCommitTask is the task of an orchestrator step commit, from its trailers ("" for any
// other commit).
func stepCommitTask(trailers string) string {
	var task string
	role := false
	for _, t := range strings.Split(trailers, "\x1f") {
		key, val, ok := strings.Cut(t, ":")
		if !ok {
			continue
		}
		switch {
		case strings.EqualFold(strings.TrimSpace(key), "Norma-Task"):
			task = strings.TrimSpace(val)
		case strings.EqualFold(strings.TrimSpace(key), "Norma-Role"):
			role = true
		}
	}
	if !role {
		return ""
	}
	return task
}

// madeOnTaskBranches reads the task branches' reflogs: per task, the commits made on its
// branch, and every commit the reflog mentions (so a head it shows arriving by creation, a
// reset or a fast-forward is known not to be the task's own).
func madeOnTaskBranches(ctx context.Context, g git.Runner, branches int) (made map[string][]string, seen map[string]map[string]bool) {
	made, seen = map[string][]string{}, map[string]map[string]bool{}
	if branches == 0 {
		return made, seen // with no ref to walk, log -g would walk HEAD's reflog
	}
	out, err := g.Output(ctx, "-c", "log.showSignature=false", "log", "-g", "--format=%gd%x1f%H%x1f%gs", "--glob=refs/heads/"+worktree.BranchPrefix+"*")
	if err != nil {
		return made, seen
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\x1f", 3)
		if len(f) != 3 {
			continue
		}
		ref, _, _ := strings.Cut(strings.TrimPrefix(f[0], "refs/heads/"), "@{")
		task, ok := strings.CutPrefix(ref, worktree.BranchPrefix)
		if !ok {
			continue
		}
		if seen[task] == nil {
			seen[task] = map[string]bool{}
		}
		seen[task][f[1]] = true
		if madeThere(f[2]) {
			made[task] = append(made[task], f[1])
		}
	}
	return made, seen
}

// madeThere says whether a branch reflog message records a commit made on the branch rather
// than the branch moving to a commit made elsewhere: its creation, `git branch -f`, a reset,
// a fast-forward (by merge, pull or fetch) or git-norma restarting a conflicting branch from
// its target.
func madeThere(msg string) bool {
	for _, p := range []string{"branch: Created from", "branch: Reset to", "reset: moving to", "norma: restart from"} {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	return !strings.HasSuffix(msg, ": Fast-forward") && !strings.HasSuffix(msg, ": fast-forward")
}

// unverified says why task's commit sha is not verified ("" when a run or a clean-worktree
// check recorded a PASS for exactly that commit).
func (a *App) unverified(ctx context.Context, task, sha string) string {
	records := a.loadVerdicts(ctx)
	defer records.close()
	v := records.of(ctx, task)
	if slices.Contains(v.passHeads, sha) {
		return ""
	}
	return v.why(task, sha)
}

// verdictRecords reads the recorded verdicts of tasks from the run store, opened once.
type verdictRecords struct {
	st  *store.Store
	err string // why there is no store to read
}

// loadVerdicts opens the run store for reading verdicts; a repository without one (never
// initialised, or .norma/ removed) has none, and the store is not created for it.
func (a *App) loadVerdicts(ctx context.Context) *verdictRecords {
	if _, err := os.Stat(a.Repo.Path("norma.db")); err != nil {
		return &verdictRecords{err: "no run is recorded here: " + filepath.Join(".norma", "norma.db") + " is missing"}
	}
	st, err := a.OpenStore(ctx)
	if err != nil {
		return &verdictRecords{err: fmt.Sprintf("cannot read the run store: %v", err)}
	}
	return &verdictRecords{st: st}
}

func (r *verdictRecords) close() {
	if r.st != nil {
		r.st.Close()
	}
}

// taskVerdicts are a task's recorded verdicts: the commits a PASS holds for, and the last
// verdict recorded for each commit.
type taskVerdicts struct {
	passHeads []string
	last      map[string]string // commit -> "FAIL (run r-...)"
	lastRun   string            // the task's latest verdict, whichever commit it was for
	err       string
}

func (r *verdictRecords) of(ctx context.Context, task string) taskVerdicts {
	v := taskVerdicts{last: map[string]string{}, err: r.err}
	if r.st == nil {
		return v
	}
	runs, _ := r.st.RunsForTask(ctx, task, 50)
	for _, run := range runs {
		passHead, head := run.PassHead, run.Head
		verdict := fmt.Sprintf("%s (run %s)", orDash(run.Verdict), run.ID)
		if v.lastRun == "" {
			v.lastRun = verdict
		}
		if run.Status == store.StatusPassed && passHead != "" {
			v.passHeads = append(v.passHeads, passHead)
		}
		for _, c := range []string{head, passHead} {
			if _, ok := v.last[c]; c != "" && !ok {
				v.last[c] = verdict
			}
		}
	}
	return v
}

// why says why task's commit sha is not verified.
func (v taskVerdicts) why(task, sha string) string {
	var detail string
	switch {
	case v.err != "":
		detail = v.err
	case v.last[sha] != "":
		detail = "last verdict " + v.last[sha]
	case v.lastRun != "":
		detail = "last verdict " + v.lastRun
	default:
		detail = "never checked"
	}
	return fmt.Sprintf("norma/task/%s at %.10s has no recorded PASS (%s)", task, sha, detail)
}

func (a *App) refusal(what string, refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	hint := "verify it: git norma check <task> in the task's worktree, or git norma run <task> --no-land"
	if a.uninitialised {
		hint = "git-norma is not initialised here, so no PASS is on record: git norma init, then verify it (git norma check or run); or remove these checks: git norma hooks uninstall"
	}
	return &Error{Code: ExitFail,
		Err:  fmt.Errorf("refusing to %s unverified work:\n  %s", what, strings.Join(refused, "\n  ")),
		Hint: hint + undo(what) + "; to " + what + " anyway, deliberately: git " + what + " --no-verify"}
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

func undo(what string) string {
	if what == "merge" {
		return "; meanwhile: git merge --abort"
	}
	return ""
}
