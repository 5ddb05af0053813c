package guard

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/worktree"
)

// absent is the old value update-ref takes for "only if it does not exist": the zero id, as
// long as the repository's ids (40 digits with SHA-1, 64 with SHA-256).
func absent(oid string) string { return strings.Repeat("0", len(oid)) }

// readRefs reads the values of the refs under dir ("refs/heads", "refs/remotes") that keep
// selects straight from the ref files (packed-refs, then the loose refs that override it): a
// few file reads, no process. A repository whose refs are in a reftable, or whose refs/ has a
// symbolic link in it (viaGit: git follows it, a walk of the files does not), is asked
// through git for-each-ref.
func (p Places) readRefs(ctx context.Context, dir string, viaGit bool, keep func(string) bool) (map[string]string, error) {
	gitDir, out := p.GitDir, map[string]string{}
	if _, err := os.Stat(filepath.Join(gitDir, "reftable")); err == nil || viaGit {
		lines, err := p.Git.ForEachRef(ctx, "%(objectname) %(refname) %(symref)", dir+"/")
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(lines, "\n") {
			f := strings.Split(l, " ")
			if len(f) != 3 || !keep(f[1]) {
				continue
			}
			out[f[1]] = f[0]
			if f[2] != "" {
				out[f[1]] = "ref: " + f[2] // as its file says, so that both ways read it alike
			}
		}
		return out, nil
	}
	if data := readRegular(filepath.Join(gitDir, "packed-refs")); data != nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if oid, name, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(oid, "#") && !strings.HasPrefix(oid, "^") && keep(name) {
				out[name] = oid
			}
		}
	}
	err := filepath.WalkDir(filepath.Join(gitDir, filepath.FromSlash(dir)), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a ref deleted while walking is simply gone
		}
		rel, _ := filepath.Rel(gitDir, path)
		name := filepath.ToSlash(rel)
		if !keep(name) || strings.HasSuffix(name, ".lock") {
			return nil
		}
		if data := readRegular(path); data != nil {
			out[name] = strings.TrimSpace(string(data))
		}
		return nil
	})
	return out, err
}

// refs reads the target's and the task branches' values.
func (g *Guard) refs(ctx context.Context, viaGit bool) (map[string]string, error) {
	return g.readRefs(ctx, "refs/heads", viaGit, func(name string) bool {
		return name == "refs/heads/"+g.Target || strings.HasPrefix(name, "refs/heads/"+worktree.BranchPrefix)
	})
}

// remotes reads the remote-tracking refs but the remotes' task branches: exactly what the
// hooks' gate takes as published (hooks.Gate.Published: --remotes --exclude=*/norma/task/*,
// matched below refs/remotes/, so refs/remotes/norma/task/x is published and watched).
func (g *Guard) remotes(ctx context.Context, viaGit bool) (map[string]string, error) {
	return g.readRefs(ctx, "refs/remotes", viaGit, func(name string) bool {
		rel, ok := strings.CutPrefix(name, "refs/remotes/")
		return ok && !strings.Contains(rel, "/"+worktree.BranchPrefix)
	})
}

// replaces reads the replace refs.
func (g *Guard) replaces(ctx context.Context, viaGit bool) (map[string]string, error) {
	return g.readRefs(ctx, "refs/replace", viaGit, func(name string) bool { return strings.HasPrefix(name, "refs/replace/") })
}

// checkRefs reports a guarded ref that moved and sets it back, compare-and-swap, so a move
// made after the check is never undone.
//   - The run's own task branch is the workspace's, checked when the step is committed.
//   - The target cannot have moved by a landing: Snapshot held the landing lock.
//   - Another task's branch may be moved by a run of that task going on meanwhile (its lock
//     held before or after the step). A deleted one was landed or pruned, unless it held a PASS
//     not landed yet: that one is put back.
//
// What decides is the task locks and the store as it was before the step, never records
// written during it, which the agent could have written.
func (g *Guard) checkRefs(ctx context.Context, s *Snapshot, viaGit bool, add func(path, fate string)) {
	now, err := g.refs(ctx, viaGit)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs"), "could not read: "+err.Error())
		return
	}
	var liveNow map[string]bool // read once, when a task branch moved
	isBusy := func(task string) bool {
		if liveNow == nil {
			liveNow = g.liveTasks()
		}
		return s.live[task] || liveNow[task]
	}
	own := "refs/heads/" + worktree.TaskBranch(g.TaskID)
	for _, name := range sortedKeys(now, s.refs) {
		before, after := s.refs[name], now[name]
		if before == after || name == own {
			continue
		}
		if name != "refs/heads/"+g.Target {
			task := strings.TrimPrefix(name, "refs/heads/"+worktree.BranchPrefix)
			if after == "" && !isBusy(task) && s.unlanded[name] {
				add(name, outcome(g.Git.UpdateRef(ctx, name, before, absent(before), ""), "restored: it holds the task's PASS, not landed yet", "not restored: "))
				continue
			}
			if after == "" || isBusy(task) {
				continue
			}
		}
		// Where it was is said: it may be a commit of yours made meanwhile (git reflog has it,
		// not any branch), which the guard cannot tell from an agent's.
		fate := "moved back"
		if after != "" && !strings.HasPrefix(after, "ref:") {
			fate = fmt.Sprintf("moved back from %.10s", after)
		}
		if before == "" {
			// Its commits stay in the repository until git's gc: the id finds them.
			fate, err = fmt.Sprintf("removed; it was at %.10s", after), g.Git.DeleteRef(ctx, name, after)
		} else {
			err = g.Git.UpdateRef(ctx, name, before, cmp.Or(after, absent(before)), "")
		}
		if err != nil {
			fate = "not moved back: it moved again since (" + firstLine(err) + ")"
		}
		add(name, fate)
	}
}

// unlandedPasses are the task branches (of refs) whose head holds an unlanded PASS
// (unlandedPass).
func (g *Guard) unlandedPasses(ctx context.Context, refs map[string]string) map[string]bool {
	out := map[string]bool{}
	for name, head := range refs {
		if task, ok := strings.CutPrefix(name, "refs/heads/"+worktree.BranchPrefix); ok && g.unlandedPass(ctx, task, head) {
			out[name] = true
		}
	}
	return out
}

// unlandedPass says a run of task recorded a PASS for head that did not land: the branch then
// holds verified work no one has yet, which a deletion (not a landing, nor a prune of a landed
// task) would lose.
func (g *Guard) unlandedPass(ctx context.Context, task, head string) bool {
	if g.Store == nil || head == "" {
		return false
	}
	runs, err := g.Store.RunsForTask(ctx, task, 0) // however many checks of the task came since
	if err != nil {
		return false
	}
	for _, r := range runs {
		if r.LandedCommit != "" {
			return false // its work landed: the branch may go
		}
		if r.PassHead == head {
			return true
		}
	}
	return false
}

// checkRemotes reports a remote-tracking ref that, made or moved during the step, brings task
// work into what the hooks' gate takes as published — which it then lets through unjudged —
// and sets it back. A fetch can bring task work too (a teammate merged a task's branch on the
// server): the remote is asked, and a ref at what the remote has there is a fetch. A symbolic
// ref is judged by where it leads; a ref that went away publishes nothing more.
func (g *Guard) checkRemotes(ctx context.Context, s *Snapshot, viaGit bool, add func(path, fate string)) {
	now, err := g.remotes(ctx, viaGit)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs", "remotes"), "could not read: "+err.Error())
		return
	}
	var work map[string]bool // the task branches' commits not on the target, read once
	for _, name := range sortedKeys(now) {
		before, after := s.remotes[name], now[name]
		if before == after || after == "" {
			continue
		}
		symbolic := strings.HasPrefix(after, "ref:")
		commit := after
		if symbolic {
			if commit, err = g.Git.Resolve(ctx, name); err != nil {
				continue // leads nowhere: publishes nothing
			}
		}
		if work == nil {
			work = g.taskWork(ctx, s, viaGit)
		}
		exclude := []string{"refs/heads/" + g.Target}
		if before != "" && !strings.HasPrefix(before, "ref:") {
			exclude = append(exclude, before)
		}
		brought, err := g.Git.Commits(ctx, []string{commit}, exclude)
		if err != nil || !slices.ContainsFunc(brought, func(c string) bool { return work[c] }) {
			continue
		}
		if !symbolic && g.remoteHas(ctx, name, after) {
			continue // a fetch
		}
		add(name, g.setBack(ctx, name, before, after, symbolic))
	}
}

// taskWork are the commits of the task branches, before and after the step, that are not on
// the target.
func (g *Guard) taskWork(ctx context.Context, s *Snapshot, viaGit bool) map[string]bool {
	now, _ := g.refs(ctx, viaGit)
	var heads []string
	for _, refs := range []map[string]string{s.refs, now} {
		for name, v := range refs {
			if strings.HasPrefix(name, "refs/heads/"+worktree.BranchPrefix) && v != "" {
				heads = append(heads, v)
			}
		}
	}
	work := map[string]bool{}
	if len(heads) == 0 {
		return work
	}
	commits, _ := g.Git.Commits(ctx, heads, []string{"refs/heads/" + g.Target})
	for _, c := range commits {
		work[c] = true
	}
	return work
}

// remoteAnswer bounds asking a remote whether it has a commit (remoteHas).
const remoteAnswer = 20 * time.Second

// remoteHas says the remote of a remote-tracking ref has commit at that branch now. Asked only
// for a ref that brings task work; no answer (offline, a remote that is not configured) is no.
func (g *Guard) remoteHas(ctx context.Context, name, commit string) bool {
	remote, branch, ok := strings.Cut(strings.TrimPrefix(name, "refs/remotes/"), "/")
	if !ok {
		return false
	}
	if url, err := g.Git.Config(ctx, "remote."+remote+".url"); err != nil || strings.TrimSpace(url) == "" {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, remoteAnswer)
	defer cancel()
	heads, err := g.Git.RemoteHeads(rctx, remote, branch)
	return err == nil && heads[branch] == commit
}

// setBack puts a remote-tracking ref back as it was before the step, compare-and-swap for a
// plain one (a move made since is never undone), and says what became of it.
func (g *Guard) setBack(ctx context.Context, name, before, after string, symbolic bool) string {
	const why = ": it made task work look published"
	var err error
	fate := "moved back" + why
	if before == "" || symbolic || strings.HasPrefix(before, "ref:") {
		old := after
		if symbolic {
			old = "" // the symbolic ref itself goes, whatever it leads to
		}
		fate = "removed" + why
		if err = g.Git.DeleteRef(ctx, name, old); err == nil && before != "" && !strings.HasPrefix(before, "ref:") {
			fate = "moved back" + why
			err = g.Git.UpdateRef(ctx, name, before, absent(before), "")
		}
	} else {
		err = g.Git.UpdateRef(ctx, name, before, after, "")
	}
	if err != nil {
		fate = "not set back: it moved again since (" + firstLine(err) + ")"
	}
	return fate
}

// checkReplaces sets back every replace ref made, moved or removed during the step: git-norma's
// own git ignores them, but yours would show (check out, push, build on) one commit as
// another — a commit on the target as one holding what no task made.
func (g *Guard) checkReplaces(ctx context.Context, s *Snapshot, viaGit bool, add func(path, fate string)) {
	now, err := g.replaces(ctx, viaGit)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs", "replace"), "could not read: "+err.Error())
		return
	}
	for _, name := range sortedKeys(now, s.replaces) {
		before, after := s.replaces[name], now[name]
		if before == after {
			continue
		}
		fate := "moved back"
		switch {
		case before == "":
			fate, err = "removed", g.Git.DeleteRef(ctx, name, "")
		case after == "":
			fate, err = "restored", g.Git.UpdateRef(ctx, name, before, absent(before), "")
		default:
			err = g.Git.UpdateRef(ctx, name, before, "", "")
		}
		add(name, outcome(err, fate, "could not set back: ")+": it makes git read one commit as another")
	}
}

// refLinks are the symbolic links under the refs directory (the directory itself included):
// git follows them, so a link makes it read refs from elsewhere — a branch the guard, which
// reads the files without following links, would not see move, or a task's branch listed
// under refs/remotes/, where the hooks take what it holds as published.
func (g *Guard) refLinks() map[string]bool {
	links := map[string]bool{}
	_ = filepath.WalkDir(filepath.Join(g.GitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			links[p] = true
		}
		return nil
	})
	return links
}

// checkRefLinks removes a symbolic link made under refs/remotes/ or refs/replace/ during the
// step (nothing of yours is there), and reports one made anywhere else under refs/, which only
// you can judge.
func (g *Guard) checkRefLinks(s *Snapshot, add func(path, fate string)) {
	for _, p := range sortedKeys(g.refLinks()) {
		if s.links[p] {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(g.GitDir, "refs"), p)
		fate := "not removed: a symbolic link makes git read refs from elsewhere; look at it, then remove it yourself"
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == "remotes" || first == "replace" {
			fate = outcome(os.Remove(p), "removed: a symbolic link made git read refs from elsewhere", "could not remove it: ")
		}
		add(p, fate)
	}
}
