package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
)

// LoopOptions are the choices of `git norma loop`.
type LoopOptions struct {
	// MaxTasks stops the loop after that many runs (0: until nothing is ready).
	MaxTasks int
	// Parallel is how many independent tasks run at once (1 when 0).
	Parallel int
	Scope    Scope
	NoLand   bool
	Live     loop.LiveFunc
	// Force starts runs even with a guard violation pending (one the loop meets stops it).
	Force bool
	// Poll, when set, makes the loop a worker: with nothing ready or running it looks again
	// after Poll (up to a fifth more at random, so workers started together do not ask
	// together) instead of stopping.
	Poll time.Duration
}

// LoopReport is what a loop did, run by run, and why it stopped.
type LoopReport struct {
	Runs []RunReport `json:"runs"`
	// Stopped is nothing_ready, max_tasks, paused, guard_violation or interrupted.
	Stopped  string `json:"stopped"`
	Message  string `json:"message"`
	ExitCode int    `json:"exit_code"`
}

// Loop runs the next ready task (landing a PASS) until nothing is ready, a pause is requested,
// MaxTasks runs were made or it is interrupted. With Parallel > 1 it keeps up to that many
// runs of independent tasks going at once; their landings are serialised. A task is tried at
// most once per loop, so a failing task cannot monopolise it.
func (a *App) Loop(ctx context.Context, o LoopOptions) (LoopReport, error) {
	o.Parallel = max(o.Parallel, 1)
	if max := a.Config.MaxParallel; o.Parallel > max {
		return LoopReport{}, usagef(fmt.Sprintf(`raise "max_parallel" in .norma/config.json (it is %d)`, max),
			"--parallel %d is over the configured max_parallel", o.Parallel)
	}
	if _, err := a.Tracker(); err != nil { // a backlog that cannot be used stops it before anything starts
		return LoopReport{}, err
	}
	// Every task lands where the loop was started for: a person who switches their checkout
	// to another branch meanwhile must not get the next tasks' squash commits there. (No
	// branch to land on: each run says so, with its fix.)
	target, _ := a.targetBranch(ctx)
	if o.Parallel > 1 {
		// Without a pid namespace a confined agent may change other runs' launchers' resource
		// limits (prlimit: Landlock does not govern it), and a check whose tool cannot start
		// may pass. Runs one at a time never meet.
		c, err := a.confiner().confinement()
		if err != nil {
			return LoopReport{}, err
		}
		if c.landlock() && !c.namespace {
			warn(o.Live, "", "runs take turns (as with --parallel 1): without a pid namespace (%s) one run's agent could reach another run's checks", c.nsWhy)
			o.Parallel = 1
		}
	}
	// The loop's one store, handed to each of its runs: one writer connection per process.
	st, err := a.Repo.OpenStore(ctx)
	if err != nil {
		return LoopReport{}, err
	}
	defer st.Close()
	a.Repo.recordEndedUnguarded(ctx, st, a.Now) // a landing killed while its checks ran
	if !o.Force {
		if err := refuseViolated(ctx, st); err != nil {
			return LoopReport{}, err
		}
	}
	// Before selecting: a task a dead run left in progress is not ready. (The loop's time starts
	// before, so a violation recovery finds stops the loop before it starts anything.)
	since := a.Now()
	if err := a.recoverCrashed(ctx, st, target, o.NoLand, o.Live); err != nil {
		return LoopReport{}, environmentFailed(ctx, err)
	}
	l := &looper{app: a, st: st, target: target, o: o, results: make(chan runResult), running: map[string]bool{}, since: since}
	return l.loop(ctx)
}

// environmentFailed is err, the loop's own failure to read the backlog or recover dead runs,
// as a failure of its environment (exit 128), not of a task: a job script must not take it for
// a task's failed checks (examples/kubernetes). An interruption stays one.
func environmentFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return withKind(ErrEnvironment, err)
}

// looper is one loop in progress.
type looper struct {
	app *App
	st  *store.Store
	// target is the branch the loop started for, where its runs land ("": none to land on).
	target  string
	o       LoopOptions
	rep     LoopReport
	tried   []string
	running map[string]bool
	results chan runResult
	started int
	// since is when the loop started: a guard violation recorded since stops it.
	since time.Time
	// stopped is why no new run is started (empty while selecting goes on).
	stopped, message string
	code             int
	// fatal is an error no other task can get past (git, the store, the config): nothing more
	// starts, and it is returned once the runs going on end.
	fatal error
	// idle says a worker found nothing ready and said so (it says it once per idle spell).
	idle bool
	// later are the tasks a worker could not start for the moment (tryLater): nothing more
	// starts until its next look, which tries them again.
	later []string
	// busy are the tasks another git-norma held when the loop would have run them: a worker
	// tries them again at its next look, without holding up other tasks meanwhile.
	busy []string
}

// runResult is one run's report, and its error when it could not run.
type runResult struct {
	run RunReport
	err error
}

func (l *looper) loop(ctx context.Context) (LoopReport, error) {
	l.rep.Runs = []RunReport{}
	for {
		if err := l.fill(ctx); err != nil {
			for len(l.running) > 0 { // the runs still going
				l.collect(<-l.results)
			}
			return l.rep.failed(environmentFailed(ctx, err))
		}
		if len(l.running) == 0 {
			if l.fatal != nil {
				return l.rep.failed(l.fatal)
			}
			return l.rep.stop(l.stopped, l.message, l.code), nil
		}
		l.collect(<-l.results)
	}
}

// collect records a finished run; an interruption or a fatal error stops new runs.
func (l *looper) collect(r runResult) {
	delete(l.running, r.run.TaskID)
	l.rep.Runs = append(l.rep.Runs, r.run)
	if r.err != nil && ExitCode(r.err) == ExitFatal {
		if l.fatal == nil {
			l.fatal = r.err
		}
		l.stop("fatal", r.err.Error(), ExitFatal)
		return
	}
	if errors.As(r.err, new(tryLater)) {
		l.couldNotStart(r)
	}
	if r.run.StopReason == StopTaskBusy && l.o.Poll > 0 {
		l.busy = append(l.busy, r.run.TaskID)
	}
	if r.err == nil && r.run.ExitCode == ExitFatal && l.stopped == "" {
		// The agent cannot run here (its run says why): the next task would fail alike.
		l.stop("fatal", fmt.Sprintf("the agent of task %s cannot run here, as its run says; every task would fail alike: fix that, then run the loop again", r.run.TaskID), ExitFatal)
	}
	if r.run.ExitCode == ExitInterrupted && l.stopped == "" {
		l.stop("interrupted", "interrupted during "+r.run.TaskID, ExitInterrupted)
	}
}

// couldNotStart deals with a run that could not start for the moment: a worker that waits for
// work tries its task again at its next look; any other loop stops there.
func (l *looper) couldNotStart(r runResult) {
	last := len(l.rep.Runs) - 1
	why := r.err.Error()
	if hint := hintOf(r.err); hint != "" {
		why += " (" + hint + ")" // what to do: a remote to check, a checkout to clean up
	}
	if l.o.Poll <= 0 {
		// What kept it from starting (the remote, the target's checkout) keeps every other
		// task from starting too; and a job that exits when idle must not pass for one that
		// found nothing to do (a Kubernetes Job, a CI matrix).
		l.rep.Runs[last].ExitCode = ExitFatal
		l.stop("cannot_start", fmt.Sprintf("task %s could not start: %s", r.run.TaskID, why), ExitFatal)
		return
	}
	// However long the outage, the report keeps one entry per task: its last try (a task runs
	// once a loop, so an earlier error of it was a try that could not start).
	l.rep.Runs = append(slices.DeleteFunc(l.rep.Runs[:last], func(run RunReport) bool {
		return run.TaskID == r.run.TaskID && run.Status == "error"
	}), r.run)
	say(l.o.Live, r.run.TaskID, "loop: task %s could not start: %s; trying again in %s", r.run.TaskID, why, l.o.Poll)
	l.later = append(l.later, r.run.TaskID)
}

// fill starts runs until every slot is taken or there is nothing (more) to start.
func (l *looper) fill(ctx context.Context) error {
	for l.stopped == "" && len(l.running) < l.o.Parallel {
		switch {
		case ctx.Err() != nil:
			l.stop("interrupted", "interrupted", ExitInterrupted)
			return nil
		case l.o.MaxTasks > 0 && l.started >= l.o.MaxTasks:
			l.stop("max_tasks", fmt.Sprintf("ran %d task(s), the --max-tasks limit", l.started), 0)
			return nil
		case l.app.Repo.PauseReason() != "":
			l.stop("paused", "paused: "+l.app.Repo.PauseReason()+resumeHint, 0)
			return nil
		}
		if v := violationSince(ctx, l.st, l.since, ""); v != "" {
			l.stop(loop.StopGuardViolation, v+"; nothing more starts until you clear it: git norma resume", ExitStopped)
			return nil
		}
		sel, err := l.app.Next(ctx, l.o.Scope, l.tried, slices.Collect(maps.Keys(l.running)))
		if err != nil {
			return err
		}
		if sel.TaskID == "" || len(l.later) > 0 {
			if len(l.running) > 0 {
				return nil // the runs going on may unblock more
			}
			if l.o.Poll <= 0 {
				l.stop("nothing_ready", "no ready task left"+scopeText(sel.Scope)+sel.ReviewHint(), 0)
				return nil
			}
			if !l.idle && len(l.later) == 0 {
				say(l.o.Live, "", "loop: nothing ready%s; waiting for work (every %s)", scopeText(sel.Scope), l.o.Poll)
				l.idle = true
			}
			// What a run killed meanwhile left is recovered, so its task can run again.
			if err := l.app.recoverCrashed(ctx, l.st, l.target, l.o.NoLand, l.o.Live); err != nil {
				say(l.o.Live, "", "loop: recovering dead runs failed: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(l.o.Poll + rand.N(l.o.Poll/5+1)):
			}
			l.tried = slices.DeleteFunc(l.tried, func(id string) bool { return slices.Contains(l.later, id) || slices.Contains(l.busy, id) })
			l.later, l.busy = nil, nil
			continue
		}
		l.idle = false
		l.start(ctx, sel)
	}
	return nil
}

func (l *looper) start(ctx context.Context, sel Selection) {
	l.tried = append(l.tried, sel.TaskID)
	l.running[sel.TaskID] = true
	l.started++
	say(l.o.Live, sel.TaskID, "loop: task %s %q (%s)", sel.TaskID, sel.Title, sel.Reason)
	go func() {
		run, err := l.app.Run(ctx, RunOptions{TaskID: sel.TaskID, NoLand: l.o.NoLand, Live: l.o.Live, IgnoreViolation: true, store: l.st, target: l.target})
		switch {
		case errors.Is(err, ErrClaimLost):
			say(l.o.Live, sel.TaskID, "loop: task %s was claimed elsewhere first; going on with the next ready task", sel.TaskID)
			run, err = RunReport{TaskID: sel.TaskID, Title: sel.Title, Status: "skipped", StopReason: StopClaimLost, Message: err.Error()}, nil
		case errors.Is(err, ErrLocked):
			// Another git-norma of this clone holds the task (a run or a landing by hand, a
			// check, prune): no failure of the task's, and a worker tries it at its next look.
			say(l.o.Live, sel.TaskID, "loop: task %s is busy: %v; going on with the next ready task", sel.TaskID, err)
			run, err = RunReport{TaskID: sel.TaskID, Title: sel.Title, Status: "skipped", StopReason: StopTaskBusy, Message: err.Error()}, nil
		}
		if err != nil && run.RunID == "" {
			run = RunReport{TaskID: sel.TaskID, Title: sel.Title, Status: "error"}
		}
		if err != nil { // a run that ended with an error keeps what it did (what it landed)
			run.Message, run.ExitCode = err.Error(), ExitCode(err)
		}
		run.TaskID = sel.TaskID
		l.results <- runResult{run, err}
	}()
}

func (l *looper) stop(reason, msg string, code int) {
	l.stopped, l.message, l.code = reason, msg, code
}

// stop finishes the report; the exit code is the worst of the runs' (or code, if worse).
// failed is the report of a loop that err stopped, and err: the runs it made are reported
// with it (a task landed before the backlog broke).
func (r LoopReport) failed(err error) (LoopReport, error) {
	reason := "fatal"
	if ExitCode(err) == ExitInterrupted {
		reason = "interrupted"
	}
	return r.stop(reason, err.Error(), ExitCode(err)), err
}

func (r LoopReport) stop(reason, msg string, code int) LoopReport {
	r.Stopped, r.Message, r.ExitCode = reason, msg, code
	for _, run := range r.Runs {
		r.ExitCode = max(r.ExitCode, run.ExitCode)
	}
	return r
}

func scopeText(s Scope) string {
	switch {
	case s.Feature != "":
		return " under feature " + s.Feature
	case s.Epic != "":
		return " under epic " + s.Epic
	}
	return ""
}
