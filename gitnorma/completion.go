package gitnorma

import (
	"context"
	"fmt"
	"slices"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// completeParents applies the spec's completion rules after a task closed: a feature (then its
// epic, and so on up) whose children are all closed is closed when its own Verify commands
// pass on the landed commit. Without Verify commands its acceptance cannot be checked, so it is
// left open with a note saying so — git-norma never closes on an unverified claim. live hears
// each outcome: a parent left open is otherwise only in its notes, out of the user's sight.
func (ld *lander) completeParents(ctx context.Context, st *store.Store, run guardedRun, commit string, live loop.LiveFunc) {
	runID, taskID := run.runID, run.taskID
	tr, err := ld.tracker()
	if err != nil {
		return
	}
	all, err := tr.List(ctx)
	if err != nil {
		return
	}
	byID := map[string]tracker.Task{}
	children := map[string][]string{}
	for _, t := range all {
		byID[t.ID] = t
		if t.Parent != "" {
			children[t.Parent] = append(children[t.Parent], t.ID)
		}
	}
	byID[taskID] = withStatus(byID[taskID], tracker.StatusClosed)
	for id := byID[taskID].Parent; id != ""; id = byID[id].Parent {
		parent := byID[id]
		openChild := slices.ContainsFunc(children[id], func(c string) bool { return byID[c].Status != tracker.StatusClosed })
		if parent.Status == tracker.StatusClosed || openChild {
			return
		}
		outcome, closed := ld.completeOne(ctx, st, tr, run, parent, len(children[id]), commit)
		say(live, taskID, "parent %s", outcome)
		_ = st.AppendEvent(ctx, runID, store.Event{TS: ld.now(), Type: "parent_completion", Message: outcome,
			Data: map[string]any{"task": id, "closed": closed}})
		if !closed {
			return
		}
		byID[id] = withStatus(parent, tracker.StatusClosed)
	}
}

func withStatus(t tracker.Task, s string) tracker.Task {
	t.Status = s
	return t
}

// completeOne verifies and closes one parent, or leaves it open with a note. It returns what
// happened and whether the parent was closed.
func (ld *lander) completeOne(ctx context.Context, st *store.Store, tr tracker.Tracker, run guardedRun, p tracker.Task, n int, commit string) (string, bool) {
	runID := run.runID
	verify := loop.ParseReadyContract(p.Description).Verify
	if len(verify) == 0 {
		msg := fmt.Sprintf("all %d children are closed; its own acceptance has no Verify command, so git-norma leaves closing it to you", n)
		ld.noteCompletion(ctx, tr, p, msg)
		return p.ID + ": " + msg, false
	}
	failing, err := ld.verifyAt(ctx, st, run, p, verify, commit)
	if err != nil || failing != "" {
		if err != nil {
			failing = err.Error()
		}
		msg := fmt.Sprintf("all %d children are closed, but its Verify failed on %.10s: %s", n, commit, failing)
		ld.noteCompletion(ctx, tr, p, msg)
		return p.ID + ": " + msg, false
	}
	reason := fmt.Sprintf("all %d children closed and its Verify passed on %.10s (git-norma run %s)", n, commit, runID)
	if err := tr.SetStatus(ctx, p.ID, tracker.StatusClosed, reason); err != nil {
		return p.ID + ": could not close: " + err.Error(), false
	}
	return p.ID + ": closed, " + reason, true
}

// verifyAt runs the parent's Verify commands in a throwaway detached worktree of commit and
// returns the first failing command ("" when all pass).
// Unconfined, the commands run the landed code, the agent's, under the fallback guard.
func (ld *lander) verifyAt(ctx context.Context, st *store.Store, run guardedRun, p tracker.Task, verify []string, commit string) (string, error) {
	ac := loop.EffectiveCriterion{ID: "AC-" + p.ID, Checks: make([]loop.CheckSpec, len(verify))}
	for i, cmd := range verify {
		ac.Checks[i] = loop.CheckSpec{ID: fmt.Sprintf("CHK-%d", i+1), Cmd: cmd, ExpectExitCodes: []int{0}}
	}
	var evidence []loop.Evidence
	checks := func() (err error) {
		evidence, _, err = ld.checker().checksAt(ctx, ld.repo.Path("runs", run.runID, "completion", p.ID), commit, []loop.EffectiveCriterion{ac})
		return err
	}
	var err error
	if ld.shieldedNow() {
		err = checks()
	} else {
		run.logDir = "completion"
		err = ld.guardedChecks(ctx, st, run, checks, "the Verify of "+p.ID+" run after "+run.taskID+" landed", p.ID+" stays open")
	}
	if err != nil {
		return "", err
	}
	for _, e := range evidence {
		if !e.Passed {
			return fmt.Sprintf("`%s` exited %d", e.Cmd, e.ExitCode), nil
		}
	}
	return "", nil
}

// noteCompletion records in the parent's state (keeping any notes of the user's) why it is
// still open.
func (ld *lander) noteCompletion(ctx context.Context, tr tracker.Tracker, p tracker.Task, msg string) {
	st, err := taskstate.Read(tr, p)
	if err != nil {
		return
	}
	st.Completion = msg
	if u, _, err := taskstate.Write(st, ld.redact, func(s *taskstate.State) { s.Completion = msg }); err == nil {
		_ = tr.Update(ctx, p.ID, u)
	}
}
