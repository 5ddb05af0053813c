package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/hooks"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
	"github.com/git-norma/git-norma/worktree"
)

// Finding is one doctor check: what was looked at, how it stands, and the fix when it is not ok.
type Finding struct {
	Check  string `json:"check"`
	Status string `json:"status"` // ok | warn | fail
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// DoctorReport is everything `git norma doctor` found.
type DoctorReport struct {
	Findings []Finding `json:"findings"`
	OK       bool      `json:"ok"`
}

func (r *DoctorReport) add(check, status, detail, fix string) {
	r.Findings = append(r.Findings, Finding{Check: check, Status: status, Detail: detail, Fix: fix})
	if status == "fail" {
		r.OK = false
	}
}

// Doctor checks the installation and the repository's state, each finding with its fix. It
// changes nothing.
func (a *App) Doctor(ctx context.Context) DoctorReport {
	rep := DoctorReport{OK: true}
	a.doctorGit(ctx, &rep)
	a.doctorTracker(ctx, &rep)
	doctorAgents(ctx, a.Repo, a.Config.Agents, &rep)
	a.confiner().doctorSandbox(&rep)
	if st, err := a.Repo.OpenStore(ctx); err != nil {
		rep.add("database", "fail", err.Error(), hintOf(err))
	} else {
		doctorStore(ctx, st, a.Repo, &rep)
		a.doctorClaims(ctx, &rep, st)
		doctorRechecks(ctx, a.Repo, &rep, st)
		st.Close()
	}
	a.doctorRemote(ctx, &rep)
	a.doctorLeases(ctx, &rep)
	doctorRuntime(ctx, a.Repo, &rep)
	return rep
}

// liveRunIDs are the runs a live process holds now. Ask it after reading what it is compared
// with: a run that starts in between is then live, never taken for a crashed one.
func liveRunIDs(repo *Repo) map[string]bool {
	live := map[string]bool{}
	for _, h := range repo.LiveRuns() {
		live[h.RunID] = true
	}
	return live
}

func (a *App) doctorGit(ctx context.Context, rep *DoctorReport) {
	out, _ := a.Repo.Git.Version(ctx)
	if err := a.Repo.Git.CheckVersion(ctx); err != nil {
		rep.add("git", "fail", err.Error(), "upgrade git to 2.38 or newer")
	} else {
		rep.add("git", "ok", out, "")
	}
	if ident, err := a.Repo.Git.Var(ctx, "GIT_COMMITTER_IDENT"); err != nil {
		rep.add("git identity", "fail", "git has no user.name/user.email", `git config --global user.name "Your Name" && git config --global user.email you@example.com`)
	} else {
		fields := strings.Fields(ident) // the name and email, then the time and zone
		rep.add("git identity", "ok", strings.Join(fields[:max(0, len(fields)-2)], " "), "")
	}
	if target, err := a.targetBranch(ctx); err != nil {
		rep.add("target branch", "fail", err.Error(), hintOf(err))
	} else {
		rep.add("target branch", "ok", target, "")
	}
	strategy, _ := a.Repo.Git.Config(ctx, "notes.norma.mergeStrategy")
	rewrite, _ := a.Repo.Git.ConfigAll(ctx, "notes.rewriteRef")
	if strategy != "cat_sort_uniq" || !notes.CopiedOnRewrite(strings.Split(rewrite, "\n")) {
		rep.add("notes config", "warn", fmt.Sprintf("notes.norma.mergeStrategy=%q, notes.rewriteRef=%q", strategy, rewrite), "git norma init")
	} else {
		rep.add("notes config", "ok", "cat_sort_uniq, rewriteRef set", "")
	}
}

func (a *App) doctorTracker(ctx context.Context, rep *DoctorReport) {
	kind := a.TrackerKind()
	tr, err := a.Tracker()
	if err != nil {
		rep.add("tracker", "fail", err.Error(), hintOf(err))
		return
	}
	detail := kind
	if kind == "beads" {
		detail += ": " + commandVersion(ctx, "bd", "version")
	}
	tasks, err := tr.List(ctx)
	if err != nil {
		rep.add("tracker", "fail", detail+": "+err.Error(), "check the backlog (bd doctor, or .beads/issues.jsonl)")
		return
	}
	rep.add("tracker", "ok", detail, "")
	var proposed []string
	for _, t := range tasks {
		if t.Status != tracker.StatusClosed && slices.Contains(t.Labels, LabelProposed) {
			proposed = append(proposed, t.ID)
		}
	}
	if len(proposed) > 0 {
		rep.add("review", "warn", fmt.Sprintf("%d task(s) filed by agents wait for your review, their Verify lines the agent's: %s", len(proposed), strings.Join(proposed, ", ")),
			"read them (git norma task show <id>), then: git norma task accept <id>...")
	}
}

func doctorAgents(ctx context.Context, repo *Repo, agents config.Agents, rep *DoctorReport) {
	for _, ra := range agents.ByRole() {
		check := "agent " + ra.Role
		_, name, err := agentFor(repo.Root, loop.Role(ra.Role), ra.Agent)
		switch {
		case err != nil:
			rep.add(check, "fail", err.Error(), hintOf(err))
		case ra.Agent.Type == config.AgentBuiltin || ra.Agent.Type == config.AgentExec:
			rep.add(check, "ok", name, "")
		default:
			rep.add(check, "ok", name+": "+commandVersion(ctx, ra.Agent.Type, "--version"), "")
		}
	}
	for _, kind := range []string{config.AgentClaude, config.AgentCodex, config.AgentGemini, config.AgentOpencode} {
		if path, err := exec.LookPath(kind); err == nil {
			rep.add("cli "+kind, "ok", path+": "+commandVersion(ctx, kind, "--version"), "")
		}
	}
}

func doctorStore(ctx context.Context, st *store.Store, repo *Repo, rep *DoctorReport) {
	v, _ := st.SchemaVersion(ctx)
	if res, err := st.IntegrityCheck(ctx); err != nil || res != "ok" {
		if err != nil {
			res = err.Error()
		}
		rep.add("database", "fail", "integrity check: "+res, "move .norma/norma.db aside and run git norma init")
	} else {
		rep.add("database", "ok", fmt.Sprintf("schema %d/%d, journal %s, integrity ok", v, store.SchemaVersion, st.JournalMode()), "")
	}
	doctorViolations(ctx, st, rep)
	doctorTrust(ctx, st, rep)
	running, _ := st.RunsWithStatus(ctx, store.StatusRunning)
	live := liveRunIDs(repo)
	for _, r := range running {
		if !live[r.ID] {
			rep.add("run "+r.ID, "warn", "marked running, but no live process holds its task's lock (it crashed)",
				"git norma prune reconciles it (so does the next git norma run of "+r.TaskID+")")
		}
	}
}

func doctorRuntime(ctx context.Context, repo *Repo, rep *DoctorReport) {
	if runs := repo.LiveRuns(); len(runs) > 0 {
		for _, h := range runs {
			rep.add("live run", "ok", fmt.Sprintf("%s (pid %d on %s, since %s)", h.What(), h.PID, h.Host, h.Started.Format(time.RFC3339)), "")
		}
	} else {
		rep.add("live runs", "ok", "none", "")
	}
	if dir, err := repo.HooksDir(ctx); err == nil {
		states := hooks.Status(dir)
		for _, name := range hooks.Names {
			state := states[name]
			status, fix := "ok", ""
			if state != "installed" {
				status, fix = "warn", "git norma hooks install"
			}
			rep.add("hook "+name, status, state+" ("+dir+")", fix)
		}
	}
	if reason := repo.PauseReason(); reason != "" {
		rep.add("pause", "warn", reason, "git norma resume")
	}
	var list []worktree.Info
	err := repo.withWorktreeLock(ctx, func() (err error) { list, err = repo.Worktrees(ctx).List(ctx); return err })
	if err != nil {
		rep.add("worktrees", "fail", err.Error(), "")
		return
	}
	for _, wt := range list {
		if wt.Prunable {
			rep.add("worktree "+wt.Path, "warn", "its directory is gone", "git worktree prune")
		} else if _, err := os.Stat(wt.Path); wt.LockedByRun() && os.IsNotExist(err) {
			// A run's worktree is locked (see worktree.Manager.Create); the next run forgets it.
			rep.add("worktree "+wt.Path, "warn", "its directory is gone (locked: "+wt.Locked+")",
				"git worktree unlock "+wt.Path+" && git worktree prune (the next run does it too)")
		}
	}
	doctorStaleLocks(ctx, repo, rep, list)
}

// doctorStaleLocks reports an index.lock left in the git directory of a run worktree no live
// run works in (a git killed with its run, or an agent): git refuses to write that worktree's
// index while it is there. The next run of the task removes it, after stopping whatever the
// dead run left running.
func doctorStaleLocks(ctx context.Context, repo *Repo, rep *DoctorReport, list []worktree.Info) {
	runs, wm := repo.Path("runs")+string(filepath.Separator), repo.Worktrees(ctx)
	type lockOf struct{ wt, task, run, lock string }
	var locks []lockOf
	for _, wt := range list {
		task, isTask := strings.CutPrefix(wt.Branch, worktree.BranchPrefix)
		if !isTask || !strings.HasPrefix(wt.Path, runs) {
			continue
		}
		if lock, err := wm.IndexLock(ctx, wt.Path); err == nil && lock != "" {
			locks = append(locks, lockOf{wt.Path, task, filepath.Base(filepath.Dir(wt.Path)), lock})
		}
	}
	if len(locks) == 0 {
		return
	}
	live := liveRunIDs(repo) // after the locks were found: a run that just made one is live
	for _, l := range locks {
		if !live[l.run] {
			rep.add("worktree "+l.wt, "warn", "a stale index.lock, left by a process that died, blocks git there: "+l.lock,
				"git norma run "+l.task+" (removes it), or: rm "+l.lock)
		}
	}
}

// commandVersion runs `cmd args` briefly and returns its first output line.
func commandVersion(ctx context.Context, name string, args ...string) string {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, name, args...).Output()
	if err != nil {
		return "version unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

func hintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}
