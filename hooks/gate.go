package hooks

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Run is one recorded run of a task, as the gate reads it from the application's store.
type Run struct {
	ID      string
	Verdict string // "" while it has none
	Passed  bool   // the run ended with a PASS
	// Head is the commit the run last worked on; PassHead the commit its PASS holds for.
	Head, PassHead string
}

// Branch is a task branch: its task and its head.
type Branch struct {
	Task, Head string
}

// Records is what the gate needs from the application: the task branches and each task's
// recent runs, newest first. An error from Runs says why there is no record to read (no
// store here, or one that cannot be read); the gate names it in its refusal.
type Records interface {
	TaskBranches(ctx context.Context) ([]Branch, error)
	Runs(ctx context.Context, task string) ([]Run, error)
}

// Gate decides whether task work that a push or a merge brings in is verified: every commit
// of a task's work must be, or be reachable from, a commit a recorded PASS of that task holds
// for. It refuses; it never runs a check.
type Gate struct {
	Git     git.Runner
	Records Records
	// BranchPrefix names task branches under refs/heads/ ("norma/task/").
	BranchPrefix string
	// Target is the configured branch tasks land on ("" when none is).
	Target string
}

// Published are the rev-list arguments for what the gate takes as judged already: the branch
// tasks land on as remote has it (the remote a push goes to, the one the branch merged into or
// pushed pulls from) — the configured target, and the remote's default branch (its HEAD), or else its main
// or master: what lands there went through its users' gates, and a teammate's verified work,
// pulled, is judged where it was made. Nothing else counts: not another branch of it (not the
// branch you happen to have checked out), nor another remote (a fork), nor a task branch,
// shared for review or named the remote's default, nor a forge's pull request.
func (g Gate) Published(ctx context.Context, remote string) []string {
	if remote == "" {
		return nil
	}
	prefix := "refs/remotes/" + remote + "/"
	var want []string
	if g.Target != "" {
		want = append(want, prefix+g.Target)
	}
	if head, err := g.Git.SymbolicRef(ctx, prefix+"HEAD"); err == nil && strings.HasPrefix(head, prefix) {
		want = append(want, head)
	}
	published := g.existing(ctx, prefix, want)
	if len(published) == 0 {
		published = g.existing(ctx, prefix, []string{prefix + "main", prefix + "master"})
	}
	return published
}

// PublishedElsewhere is the remote-tracking branch (as "upstream/main") of a remote other than
// from whose Published has all the task work that merged brings in — `git pull upstream main`
// on a main that tracks the fork; "" when there is none.
func (g Gate) PublishedElsewhere(ctx context.Context, merged []string, from string) string {
	urls, _ := g.Git.ConfigMatching(ctx, `^remote\..+\.url$`) // none: exit code 1
	for _, line := range strings.Split(strings.TrimSpace(urls), "\n") {
		key, _, _ := strings.Cut(line, " ")
		remote := strings.TrimSuffix(strings.TrimPrefix(key, "remote."), ".url")
		published := g.Published(ctx, remote)
		if remote == from || len(published) == 0 {
			continue
		}
		if refused, err := g.Refused(ctx, merged, append([]string{"HEAD"}, published...)); err == nil && len(refused) == 0 {
			return strings.TrimPrefix(published[0], "refs/remotes/")
		}
	}
	return ""
}

// existing are those of refs (under prefix) that exist and name no task branch.
func (g Gate) existing(ctx context.Context, prefix string, refs []string) []string {
	refs = slices.DeleteFunc(refs, func(ref string) bool {
		return strings.HasPrefix(strings.TrimPrefix(ref, prefix), g.BranchPrefix)
	})
	if len(refs) == 0 {
		return nil
	}
	// rev-list refuses a name it cannot resolve; for-each-ref lists the ones there are.
	out, err := g.Git.ForEachRef(ctx, "%(refname)", refs...)
	if err != nil {
		return nil
	}
	var found []string
	for _, ref := range strings.Fields(out) {
		if slices.Contains(refs, ref) && !slices.Contains(found, ref) {
			found = append(found, ref)
		}
	}
	return found
}

// PushedOver is what a push update to remote builds on (rev-list arguments after --not): what
// remote has of the target (Published), and the remote ref's current commit when it is known
// here.
func (g Gate) PushedOver(ctx context.Context, remote string, u PushUpdate) []string {
	if !ZeroID(u.RemoteID) && g.Git.HasCommit(ctx, u.RemoteID) {
		return append([]string{u.RemoteID}, g.Published(ctx, remote)...)
	}
	return g.Published(ctx, remote)
}

// TaskOf is the task whose branch ref (refs/heads/<prefix><task>) names, or "".
func (g Gate) TaskOf(ref string) string {
	if id, ok := strings.CutPrefix(ref, "refs/heads/"+g.BranchPrefix); ok {
		return id
	}
	return ""
}

// Refused finds the task work among the commits reachable from tips and not from over
// (rev-list arguments), and lists, one line per task, the work no recorded PASS covers.
//
// A commit is a task's work when git-norma made it for the task (a step commit, by its
// trailers) or git made it on the task's branch (the branch's reflog records it as anything
// but the branch's creation, a reset or a fast-forward), and so is the branch's head when the
// reflog does not say how it got there. The reflog is asked because it is git's own record of
// how a branch moved: neither the store nor the branch heads can tell a commit made on a task
// branch from one it was fast-forwarded to. What a task branch forked from, or was
// fast-forwarded or reset to, is not its work: your own commits push. The work is covered when
// it is, or is reachable from, a commit with a recorded PASS of that task among the same
// commits. Only the new commits are walked, never the whole history.
func (g Gate) Refused(ctx context.Context, tips, over []string) ([]string, error) {
	commits, err := g.Git.TrailersOf(ctx, []string{"Norma-Task", "Norma-Role"}, tips, over)
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
	for _, c := range commits {
		order[c.ID] = len(order)
		if task := stepCommitTask(c.Trailers); task != "" {
			add(task, c.ID)
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	branches, err := g.Records.TaskBranches(ctx)
	if err != nil {
		return nil, err
	}
	made, seen := g.madeOnTaskBranches(ctx, len(branches))
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
	var refused []string
	for _, task := range slices.Sorted(maps.Keys(work)) {
		v := g.verdicts(ctx, task)
		covered, err := g.covered(ctx, v.passHeadsAmong(order), over)
		if err != nil {
			return nil, err
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
		why := v.why(g.BranchPrefix+task, open[0])
		if seen[task] != nil && !seen[task][open[0]] {
			// Never on the task branch, which is there: a copy of its work, with the task's
			// verdicts, which are for the commits it copies, beside the point.
			why = fmt.Sprintf("%.10s, a copy of %s%s's work, has no recorded PASS: a rebase or a cherry-pick copies verified commits into new ones, which no PASS covers; merge or push the verified commits themselves",
				open[0], g.BranchPrefix, task)
		}
		refused = append(refused, why)
	}
	return refused, nil
}

// covered is every new commit reachable from the passed ones.
func (g Gate) covered(ctx context.Context, passed, over []string) (map[string]bool, error) {
	covered := map[string]bool{}
	if len(passed) == 0 {
		return covered, nil
	}
	below, err := g.Git.Commits(ctx, passed, over)
	if err != nil {
		return nil, err
	}
	for _, c := range below {
		covered[c] = true
	}
	return covered, nil
}

// Unverified says why task's commit sha is not verified ("" when a run or a clean-worktree
// check recorded a PASS for exactly that commit).
func (g Gate) Unverified(ctx context.Context, task, sha string) string {
	v := g.verdicts(ctx, task)
	if slices.Contains(v.passHeads, sha) {
		return ""
	}
	return v.why(g.BranchPrefix+task, sha)
}

// stepCommitTask is the task of an orchestrator step commit, from its Norma-Task and
// Norma-Role trailers: a step commit carries both, a landing commit no Norma-Role ("" for
// any commit but a step commit).
func stepCommitTask(trailers []git.Trailer) string {
	var task string
	role := false
	for _, t := range trailers {
		switch {
		case strings.EqualFold(t.Key, "Norma-Task"):
			task = t.Value
		case strings.EqualFold(t.Key, "Norma-Role"):
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
func (g Gate) madeOnTaskBranches(ctx context.Context, branches int) (made map[string][]string, seen map[string]map[string]bool) {
	made, seen = map[string][]string{}, map[string]map[string]bool{}
	if branches == 0 {
		return made, seen // with no ref to walk, log -g would walk HEAD's reflog
	}
	entries, err := g.Git.Reflogs(ctx, "refs/heads/"+g.BranchPrefix+"*")
	if err != nil {
		return made, seen
	}
	for _, e := range entries {
		task, ok := strings.CutPrefix(strings.TrimPrefix(e.Ref, "refs/heads/"), g.BranchPrefix)
		if !ok {
			continue
		}
		if seen[task] == nil {
			seen[task] = map[string]bool{}
		}
		seen[task][e.ID] = true
		if madeThere(e.Message) {
			made[task] = append(made[task], e.ID)
		}
	}
	return made, seen
}

// madeThere says whether a branch reflog message records a commit made on the branch rather
// than the branch moving to a commit made elsewhere: its creation, `git branch -f`, a reset,
// a fast-forward (by merge, pull or fetch) or git-norma restarting a conflicting branch from
// its target. Git writes these messages untranslated, whatever the user's language.
func madeThere(msg string) bool {
	for _, p := range []string{"branch: Created from", "branch: Reset to", "reset: moving to", "norma: restart from"} {
		if strings.HasPrefix(msg, p) {
			return false
		}
	}
	return !strings.HasSuffix(msg, ": Fast-forward") && !strings.HasSuffix(msg, ": fast-forward")
}

// taskVerdicts are a task's recorded verdicts: the commits a PASS holds for, and the last
// verdict recorded for each commit.
type taskVerdicts struct {
	passHeads []string
	last      map[string]string // commit -> "FAIL (run r-...)"
	lastRun   string            // the task's latest verdict, whichever commit it was for
	err       string            // why there is no record to read
}

func (g Gate) verdicts(ctx context.Context, task string) taskVerdicts {
	v := taskVerdicts{last: map[string]string{}}
	runs, err := g.Records.Runs(ctx, task)
	if err != nil {
		v.err = err.Error()
		return v
	}
	for _, run := range runs {
		verdict := fmt.Sprintf("%s (run %s)", cmp.Or(run.Verdict, "-"), run.ID)
		if v.lastRun == "" {
			v.lastRun = verdict
		}
		if run.Passed && run.PassHead != "" {
			v.passHeads = append(v.passHeads, run.PassHead)
		}
		for _, c := range []string{run.Head, run.PassHead} {
			if _, ok := v.last[c]; c != "" && !ok {
				v.last[c] = verdict
			}
		}
	}
	return v
}

// passHeadsAmong are the commits a PASS holds for that are among the new commits.
func (v taskVerdicts) passHeadsAmong(order map[string]int) []string {
	var passed []string
	for _, p := range v.passHeads {
		if _, ok := order[p]; ok {
			passed = append(passed, p)
		}
	}
	return passed
}

// why says why the commit sha of a task's branch is not verified.
func (v taskVerdicts) why(branch, sha string) string {
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
	return fmt.Sprintf("%s at %.10s has no recorded PASS (%s)", branch, sha, detail)
}
