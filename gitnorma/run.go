package gitnorma

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// RunOptions are the choices of one `git norma run`.
type RunOptions struct {
	TaskID string
	// NoLand leaves a PASSed task on its branch for review (`git norma land` later).
	NoLand bool
	// Force runs (and lands) a task whose work already landed; without it the task is closed.
	Force bool
	// Live receives each step as it starts and ends, and what the run does besides.
	Live loop.LiveFunc
	// IgnoreViolation starts the run even with a guard violation pending (as Force does):
	// loop, having checked it, sets it.
	IgnoreViolation bool
	// hops counts how many tasks this run went on to after Plan outcomes.
	hops int
	// store is the run store a loop hands its runs (nil: the run opens its own).
	store *store.Store
	// target is the branch a loop hands its runs to land on: the one it started for ("": the
	// configured target, or the branch checked out now).
	target string
}

// RunReport is how a run ended, for the summary line, --json and the exit code.
type RunReport struct {
	RunID      string   `json:"run_id"`
	TaskID     string   `json:"task_id"`
	Title      string   `json:"title"`
	Status     string   `json:"status"`
	Verdict    string   `json:"verdict,omitempty"`
	StopReason string   `json:"stop_reason,omitempty"`
	Message    string   `json:"message"`
	Iterations int      `json:"iterations"`
	Steps      int      `json:"steps"`
	Branch     string   `json:"branch"`
	Target     string   `json:"target"`
	Landed     string   `json:"landed_commit,omitempty"`
	LandError  string   `json:"land_error,omitempty"`
	LandPaths  []string `json:"land_conflicts,omitempty"`
	LandHint   string   `json:"land_hint,omitempty"`
	RunDir     string   `json:"run_dir"`
	DurationMS int64    `json:"duration_ms"`
	ExitCode   int      `json:"exit_code"`
	// Created lists issues made from Plan's outcome; Discovered those filed from Do.
	Created    []string `json:"created,omitempty"`
	Discovered []string `json:"discovered,omitempty"`
	// Proposed are those of them that wait for a person's review (filed_tasks "review").
	Proposed []string `json:"proposed,omitempty"`
	// Blocked says why this run's failure (the third in a row) blocked the task.
	Blocked string `json:"blocked,omitempty"`
	// Failure says why the last Check failed, when the run did not pass.
	Failure *loop.Failure `json:"failure,omitempty"`
	// Next is the run of the task Plan's outcome named, when the run went on with it.
	Next *RunReport `json:"next,omitempty"`

	continueWith string
}

// run is one run in progress: what it holds and must release.
type run struct {
	app     *App
	id      string
	dir     string
	pre     *preflight
	tr      tracker.Tracker
	st      *store.Store
	wm      *worktree.Manager
	ws      *worktree.Workspace
	claimed bool
	// blocked is why this run's failure blocked the task ("" when it did not).
	blocked string
	// closedByLanding says the run's landing closed the task.
	closedByLanding bool
	// forced is a run made with --force (see landRequest.forced).
	forced bool
	// noLand is a run made with --no-land: its PASS is landed, if ever, by hand.
	noLand bool
	// reconciledOwn says reconciliation met a dead run of this task, which may have changed it.
	reconciledOwn bool
	started       time.Time
	mirror        *taskMirror
	// stopLease ends the renewals of the claim's lease (taskMirror.keepLease); leaseLost is
	// what a renewal or write found once the claim was gone (reclaimed, another's; nil while
	// it holds): the run goes no further, and its work does not land.
	stopLease func()
	leaseLost *atomic.Pointer[string]
	rec       *recorder
	// guard is the fallback guard of the run's unconfined steps.
	guard *guard.Guard
	// verdict is the run's last Check verdict, for the three-strike rule.
	verdict string
	// live hears the run's steps and what it waits for.
	live loop.LiveFunc
}

// Run runs the loop on one task until PASS, a failure or a stop rule, and lands a PASS.
// Everything that can be checked is checked before anything is created.
func (a *App) Run(ctx context.Context, o RunOptions) (RunReport, error) {
	violated := func(st *store.Store) error {
		a.Repo.recordEndedUnguarded(ctx, st, a.Now) // a landing killed while its checks ran
		if o.Force || o.IgnoreViolation {
			return nil
		}
		return refuseViolated(ctx, st)
	}
	var err error
	if o.store != nil {
		err = violated(o.store)
	} else { // opened only if there is one: a repository without a store has no violation
		err = a.Repo.withStore(ctx, violated)
	}
	if err != nil {
		return RunReport{}, err
	}
	rep, err := a.runOnce(ctx, o)
	if rep.Status != StatusAlreadyLanded { // nothing ran
		a.notifier().notifyRunEnd(ctx, rep, err, o.Live) // the notify command, if configured (notify.go)
	}
	if err != nil || rep.continueWith == "" {
		return rep, err
	}
	if o.hops >= maxHops {
		rep.Message += fmt.Sprintf("; not continuing with %s: %d decompositions in a row (run it yourself)", rep.continueWith, maxHops)
		return rep, nil
	}
	say(o.Live, rep.TaskID, "continuing with %s (%s)", rep.continueWith, rep.StopReason)
	o.TaskID, o.hops = rep.continueWith, o.hops+1
	next, err := a.Run(ctx, o)
	rep.Next, rep.ExitCode = &next, next.ExitCode
	return rep, err
}

// maxHops bounds how often a run goes on with a task its Plan created: a Plan that keeps
// decomposing cannot run forever.
const maxHops = 3

// runOnce runs one task; a Plan outcome that names another task is left to Run.
func (a *App) runOnce(ctx context.Context, o RunOptions) (RunReport, error) {
	pre, tr, err := a.prepare(ctx, o.TaskID, o.target, o.Live)
	if err != nil {
		return RunReport{}, err
	}
	turn, err := namespaceTurn(ctx, pre.sandbox, o.Live, o.TaskID)
	if err != nil {
		return RunReport{}, err
	}
	defer turn()
	lock, err := a.Repo.acquireTaskLock(o.TaskID)
	if err != nil {
		return RunReport{}, err
	}
	defer lock.Release()
	st := o.store
	if st == nil {
		if st, err = a.Repo.OpenStore(ctx); err != nil {
			return RunReport{}, err
		}
		defer st.Close()
	}
	r := &run{app: a, pre: pre, tr: tr, st: st, wm: a.Repo.Worktrees(ctx), started: a.Now(), forced: o.Force, noLand: o.NoLand, live: o.Live}
	defer func() {
		if r.stopLease != nil {
			r.stopLease() // whatever way the run ends: a loop goes on, and must not keep renewing it
		}
	}()
	if err := r.reconcile(ctx); err != nil {
		return RunReport{}, err
	}
	if rep, err := r.recoverPassed(ctx, o.NoLand); err != nil {
		return RunReport{}, err
	} else if rep != nil {
		return *rep, nil
	}
	// A task in progress that names no holder may be a landed one whose claim came back with
	// the backlog: committed while its run worked, then checked out, stashed or reset to. Its
	// landing on the target says so; without one it is refused as claimed.
	claimErr := r.checkClaimable(ctx)
	if claimErr != nil && (o.Force || r.pre.task.Status != tracker.StatusInProgress || r.pre.task.Assignee != "") {
		return RunReport{}, claimErr
	}
	if !o.Force {
		if p, err := a.lander().landedBefore(ctx, st, r.pre.task, r.pre.target); err != nil {
			return RunReport{}, err
		} else if p.Commit != "" {
			// A dead run of the task (a killed --force) may have left its worktree holding the
			// branch, which nothing else frees until retention: git would refuse to check the
			// branch out or delete it meanwhile. Its uncommitted work is committed on the branch.
			r.savingDeadWork(ctx, r.pre.task.ID, func() { _ = r.freeBranch(ctx) })
			return r.alreadyLanded(ctx, p)
		}
		if claimErr != nil {
			return RunReport{}, claimErr
		}
		if err := refuseBlocked(ctx, tr, r.pre.task); err != nil {
			return RunReport{}, err
		}
		if err := refuseOpenChildren(ctx, tr, r.pre.task); err != nil {
			return RunReport{}, err
		}
	}
	if !a.confiner().shields(pre.sandbox) {
		unlock, err := a.Repo.unconfinedTurn(ctx, o.Live, o.TaskID)
		if err != nil {
			return RunReport{}, err
		}
		defer unlock()
		// Before anything of the run starts (worktree.setup included): see trust.go.
		if err := markUnshielded(ctx, st, a.Now(), "a run of "+o.TaskID+" with its agents and checks unconfined"); err != nil {
			return RunReport{}, err
		}
	}
	if err := r.begin(ctx, lock); err != nil {
		return RunReport{}, err
	}
	r.guard = r.newGuard()
	res, err := loop.Run(ctx, r.loopOptions(ctx))
	r.guard.Release() // the landing lock of a step that ended without the guard's look
	if err != nil {
		r.rec.writeNotes(context.WithoutCancel(ctx))
		return r.report(res), r.abort(err)
	}
	rep, err := r.end(ctx, res, o.NoLand)
	if rep.Landed == "" { // a landing wrote them, with the squash commit's note
		r.rec.writeNotes(context.WithoutCancel(ctx))
	}
	if err == nil && ctx.Err() == nil {
		r.autoPrune(context.WithoutCancel(ctx))
	}
	return rep, err
}

// autoPrune applies the retention config after a run; a failure is recorded, never fatal.
func (r *run) autoPrune(ctx context.Context) {
	if r.app.Config.Retention.KeepLast <= 0 && r.app.Config.Retention.KeepDays <= 0 {
		return
	}
	// One prune at a time (the runs of a parallel loop end together): a run that finds one
	// under way leaves retention to it.
	lock, err := acquireLock(r.app.Repo.Path("locks", "prune.lock"), "another git norma prune is running")
	if err != nil {
		return
	}
	defer lock.Release()
	rep, err := r.app.pruner().prune(ctx, r.st, PruneOptions{KeepLast: -1, KeepDays: -1, auto: true, heldTask: r.pre.task.ID, heldRun: r.id})
	msg := fmt.Sprintf("retention removed %d run(s) and %d branch(es)", len(rep.Runs), len(rep.Branches))
	if err != nil {
		msg = "retention failed: " + err.Error()
	}
	if err != nil || len(rep.Runs)+len(rep.Branches) > 0 {
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "pruned", Message: msg,
			Data: map[string]any{"runs": rep.Runs, "branches": rep.Branches}})
	}
}

func (r *run) loopOptions(ctx context.Context) loop.Options {
	r.rec = &recorder{st: r.st, root: r.app.Repo.Root, runID: r.id, taskID: r.pre.task.ID,
		journal: r.app.Repo.NotesJournal(), mirror: r.mirror, redact: r.app.redact, crash: r.app.crash}
	if r.app.Config.Remote != "" {
		r.rec.push = r.pushStep
	}
	o := loop.Options{
		RunID: r.id, RunDir: r.dir, Task: taskInput(r.pre.task),
		Budgets: loop.Budgets(r.app.Config.Budgets), Agents: r.pre.agents,
		Workspace: workspace{ws: r.ws, redact: r.app.redact, root: r.app.Repo.Root, runDir: r.dir, guard: r.guard,
			confined: r.app.confiner().shields(r.pre.sandbox),
			events:   func(ctx context.Context, e store.Event) { e.TS = r.app.Now(); _ = r.st.AppendEvent(ctx, r.id, e) },
			checks: func(ctx context.Context, commit string, fresh bool) (loop.CheckTree, error) {
				return checkerOf(r.app.Repo, r.app.Config, r.app.crash).checkTree(ctx, r.pre.task.ID, commit, fresh)
			}},
		Recorder: r.rec,
		Live:     r.app.redact.Live(r.live), Now: r.app.Now, Env: processEnv(), StartedAt: r.started,
		Facts:   r.mirror.facts(),
		Halt:    r.haltReason,
		Gates:   r.app.Config.Gates,
		Sandbox: r.loopSandbox(ctx),
	}
	r.noteUnconfined(ctx, r.live)
	if head, err := r.app.Repo.Git.Resolve(ctx, "refs/heads/"+r.ws.Branch()); err == nil {
		if c := r.ws.CaughtUp; c.Merged == head && c.From != "" {
			// This run merged what landed meanwhile into the branch: the work on it is as the
			// last run left it, and the Check to come checks the merge.
			head = c.From
		}
		if h := r.mirror.state.Head; h != "" && slices.Contains(r.mirror.labels, LabelHasDo) && r.wm.CaughtUpFrom(ctx, head, h, r.pre.target) {
			// Or earlier runs' catch-ups, stopped before they landed: no work either.
			head = h
		}
		o.Resume = r.mirror.resume(head, func(a, b string) bool {
			ok, _ := r.app.Repo.Git.IsAncestor(ctx, a, b)
			return ok
		})
	}
	if o.Resume != nil {
		say(r.live, r.pre.task.ID, "resuming task %s from run %s (its completed steps are not run again)", r.pre.task.ID, o.Resume.From)
	}
	return o
}

// taskInput is the task as agents see it, with the Ready Contract parsed.
func taskInput(t tracker.Task) loop.TaskInput {
	rc := loop.ParseReadyContract(t.Description)
	return loop.TaskInput{
		ID: t.ID, Title: t.Title, Description: t.Description, Type: t.IssueType,
		AcceptanceCriteria: loop.ParseAcceptance(t.AcceptanceCriteria), VerifyCommands: rc.Verify,
	}
}

// newRunID sorts by time and is unique enough across machines: r-20261122-070102-123-a1b2c3.
func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("r-%s-%s", strings.Replace(now.UTC().Format("20060102-150405.000"), ".", "-", 1), hex.EncodeToString(b))
}
