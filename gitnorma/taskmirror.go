package gitnorma

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
)

// Resumption labels (spec "Workflow State in Labels"): present while the outputs of the
// current iteration's completed steps are in the task state.
const (
	LabelHasPlan  = "norma-has-plan"
	LabelHasDo    = "norma-has-do"
	LabelHasCheck = "norma-has-check"
	// LabelBlocked marks a task whose checks failed in blockAfter consecutive runs; selection
	// skips it until a human looks.
	LabelBlocked = "norma-blocked"
	// LabelProposed marks a task an agent filed (filed_tasks "review"): its Verify lines are
	// the agent's, so selection skips it and run refuses it until a person accepts it.
	LabelProposed = "norma-proposed"
)

// blockAfter is the peer loops' three-strike rule.
const blockAfter = 3

var phaseLabels = map[loop.Role]string{loop.RolePlan: LabelHasPlan, loop.RoleDo: LabelHasDo, loop.RoleCheck: LabelHasCheck}

// taskMirror keeps the task's notes and labels in step with the run: one tracker update per
// completed step that needs saving, carrying the new state and the label changes together.
// The labels are tracked twice: labels is what the task should carry after the steps recorded
// so far, confirmed what the last successful write left on it, so the changes of a write that
// failed ride on the next.
type taskMirror struct {
	tr     tracker.Tracker
	taskID string
	state  taskstate.Stored
	labels []string
	redact redact.Redactor

	confirmed []string
	// written is the state (with the notes, where they hold it) the last successful write
	// gave the task.
	written string

	// lease, when set (bd), is how long each write's claim holds (taskstate.State.LeaseUntil); a
	// heartbeat renews it between steps (keepLease). now is the run's clock.
	lease time.Duration
	now   func() time.Time
	// trackerLeases says the tracker leased the claim itself (bd from 1.3: tracker.Leaser):
	// the heartbeat renews that lease, and a write need not.
	trackerLeases bool
	// lastLease is the last write's lease; closedByLanding says the run's landing closed
	// the task (its last write then keeps that lease: see finishRun).
	lastLease       string
	closedByLanding bool
	// resumeAt, when set, is the task branch's head the run's landing verified when it was
	// refused for a reason that leaves that work good (see finishRun).
	resumeAt string
	// takenBy, when set, is who holds the task's claim now if not the run ("" while the run
	// does): asked before a leased write once the run's lease has run out (heldUntil, its last
	// claim, write or heartbeat), since bd 1.0.5 has no conditional update: a run that was
	// slow (suspended, cut off from bd) would write its state, lease and labels over those of
	// the worker that claimed the task meanwhile. onLost hears it once; the writes stop there.
	takenBy   func(context.Context) string
	onLost    func(holder string)
	lostTo    string
	heldUntil time.Time
	// mu serialises the writes of the engine's steps and of the heartbeat, so a renewal never
	// writes an older state over a newer one.
	mu sync.Mutex
}

func newTaskMirror(tr tracker.Tracker, t tracker.Task, redact redact.Redactor) (*taskMirror, error) {
	st, err := taskstate.Read(tr, t)
	if err != nil {
		return nil, failf("", "task %s: %v", t.ID, err)
	}
	return &taskMirror{tr: tr, taskID: t.ID, state: st, labels: slices.Clone(t.Labels), confirmed: slices.Clone(t.Labels), redact: redact}, nil
}

// resume returns what the last run completed of its unfinished iteration, when the labels say
// so and the task branch agrees: a plan holds if the branch only moved forward since (an
// interrupted Do's work rescued on top); a Do result only if the branch is exactly where that
// step left it (branchHead is the head before git-norma's merges of the target into it, this
// run's or a stopped one's: they are not work). The notes and labels are hints anyone with the
// backlog can edit: they say where to resume, never what was verified — a Check is never
// resumed, and the restored plan gets the task's Verify commands and the gates enforced like
// any plan.
func (m *taskMirror) resume(branchHead string, isAncestor func(a, b string) bool) *loop.Resume {
	s := &m.state
	if !slices.Contains(m.labels, LabelHasPlan) || s.Plan == nil || s.Head == "" {
		return nil
	}
	if s.Head != branchHead && !isAncestor(s.Head, branchHead) {
		return nil
	}
	r := &loop.Resume{From: s.RunID, Plan: s.Plan}
	if s.Head == branchHead && slices.Contains(m.labels, LabelHasDo) && s.Do != nil {
		r.Do = s.Do
	}
	return r
}

// facts seed the first Plan with what the previous run left: its last failure, and its last
// Act's decision (rationale, next.notes).
func (m *taskMirror) facts() map[string]any {
	facts := map[string]any{}
	if m.state.LastFailure != nil {
		facts[loop.FactLastFailure] = *m.state.LastFailure
	}
	if m.state.Act != nil {
		facts[loop.FactLastAct] = *m.state.Act
	}
	if len(facts) == 0 {
		return nil
	}
	return facts
}

// afterStep records a finished step in the state and moves the labels: a completed step sets
// its label and clears those of later roles (their outputs are stale now); Act ends the
// iteration and clears them all, so a later iteration never reuses an earlier one's outputs.
// A write that fails is handed to failed (the run goes on: the store has the step).
func (m *taskMirror) afterStep(ctx context.Context, rec loop.StepRecord, failed func(error)) {
	if rec.Status == "skipped" {
		return // restored from this very state; nothing changed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record(rec)
	var add, remove []string
	if rec.Status == "ok" {
		if l, ok := phaseLabels[rec.Role]; ok && !settledElsewhere(rec) {
			add = []string{l}
		}
		remove = laterLabels(rec.Role)
		if settledElsewhere(rec) {
			remove = append(remove, LabelHasPlan)
		}
	}
	m.move(add, remove)
	if (rec.Builtin || rec.Role == loop.RoleCheck) && !closes(rec) {
		// A built-in Plan or Act decides from its input alone, and a Check is never resumed:
		// a run that dies before the next write has them run again (catchUp keeps their
		// journal lines). They ride on the next write: one backlog rewrite (or bd call) an
		// iteration instead of four.
		return
	}
	// The write that closes the task carries a lease too: a worker killed during the landing
	// that follows leaves a task in progress that a loop elsewhere must be able to reopen.
	m.writeLeased(ctx, failed)
}

// settledElsewhere says a Plan decided the task is not ready to work on (BLOCKED, DECOMPOSE):
// the orchestrator applies that, and the next run of the task plans again rather than
// resuming a plan that has nothing for Do.
func settledElsewhere(rec loop.StepRecord) bool {
	return rec.Role == loop.RolePlan && rec.Output.Plan != nil && rec.Output.Plan.Outcome != loop.OutcomeReady
}

// closes says Act decided to close the task. Its write goes out before the landing: a task a
// run that died right after landing closed with its resume labels on would resume a stale
// plan and check once someone reopens it.
func closes(rec loop.StepRecord) bool {
	return rec.Role == loop.RoleAct && rec.Output.Act != nil && rec.Output.Act.Decision == loop.DecisionClose
}

func laterLabels(role loop.Role) []string {
	switch role {
	case loop.RolePlan:
		return []string{LabelHasDo, LabelHasCheck}
	case loop.RoleDo:
		return []string{LabelHasCheck}
	case loop.RoleAct:
		return []string{LabelHasPlan, LabelHasDo, LabelHasCheck}
	}
	return nil
}

func (m *taskMirror) record(rec loop.StepRecord) {
	s := &m.state
	s.RunID, s.Iteration, s.Step, s.Head = rec.RunID, rec.Iteration, rec.Index, rec.Head
	s.Journal = append(s.Journal, taskstate.JournalLine{TS: notes.Stamp(rec.EndedAt), Run: rec.RunID, Step: rec.Index,
		Role: string(rec.Role), Status: rec.Status, Summary: rec.Summary})
	if rec.Status != "ok" {
		return
	}
	s.Phase = string(rec.Role)
	out := rec.Output
	switch rec.Role {
	case loop.RolePlan:
		s.Plan, s.Do, s.Check, s.Act = out.Plan, nil, nil, nil
		if settledElsewhere(rec) {
			s.Plan = nil
		}
	case loop.RoleDo:
		s.Do, s.Check = out.Do, nil
	case loop.RoleCheck:
		s.Check = out.Check
		if out.Check != nil && out.Check.Verdict.Status != loop.VerdictPass {
			f := loop.NewFailure(rec.Iteration, out.Check)
			s.LastFailure = &f
		}
	case loop.RoleAct:
		s.Act = out.Act
	}
}

// finishRun applies the three-strike rule and hands the task back (status open) in one write.
// verdict is the run's last Check verdict ("" when it never reached Check). blocked says why,
// when this run's failure blocked the task.
func (m *taskMirror) finishRun(ctx context.Context, verdict, status string) (blocked string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostTo != "" && !m.closedByLanding {
		// Reaped or claimed by another since (claimTaken, a heartbeat): no longer this run's
		// to write. (A landing that closed the task held the claim then: a heartbeat refused
		// once bd saw it closed is no loss.)
		return "", nil
	}
	var add, remove []string
	switch {
	case verdict == loop.VerdictPass:
		m.state.FailedRuns, m.state.Blocked, m.state.LastFailure = 0, "", nil
		remove = []string{LabelBlocked}
		if m.resumeAt != "" && status == tracker.StatusOpen && m.state.Plan != nil && m.state.Do != nil {
			// Only the remote kept it off (it did not answer, refused the push, or other
			// workers kept landing first): the next run, here or on another worker, resumes
			// the plan and Do's work on the branch as the landing left it (Do's commits, merged
			// with the target if an attempt did), checks that tree again (a Check is never
			// resumed) and lands it. No agent works on it twice. Only on a task handed back: one
			// a person closed (or moved) meanwhile is worked afresh if they reopen it.
			m.state.Head = m.resumeAt
			add = []string{LabelHasPlan, LabelHasDo}
		}
	case verdict != "":
		m.state.FailedRuns++
		if m.state.FailedRuns >= blockAfter {
			last := "no failure recorded"
			if m.state.LastFailure != nil {
				last = m.state.LastFailure.Summary
			}
			m.state.Blocked = fmt.Sprintf("checks failed in %d consecutive runs (last: run %s, %s); a human should look before it is selected again",
				m.state.FailedRuns, m.state.RunID, last)
			add = []string{LabelBlocked}
			blocked = m.state.Blocked
			if status == tracker.StatusOpen {
				// Blocked in the tracker's own terms too: bd ready (and bd blocked) honour the
				// status, not a label of ours.
				status = tracker.StatusBlocked
			}
		}
	}
	m.move(add, remove)
	// The run is over and its lease goes — but on a task the landing closed a lease harms
	// nothing (only tasks in progress are reaped), and keeping it saves a call.
	lease := ""
	if m.closedByLanding {
		lease = m.lastLease
	}
	return blocked, m.write(ctx, status, lease)
}

// move changes the labels the task should carry.
func (m *taskMirror) move(add, remove []string) {
	for _, l := range add {
		if !slices.Contains(m.labels, l) {
			m.labels = append(m.labels, l)
		}
	}
	m.labels = slices.DeleteFunc(m.labels, func(l string) bool { return slices.Contains(remove, l) })
}

// write brings the task to the state as it stands (with lease, "" for none): the new state,
// and the labels it should carry that the last successful write did not leave on it (or left
// on it, to remove). Where the tracker keeps the state in the notes, a note appended during the
// run stays beside the new state (see stateWrite). The caller holds mu.
func (m *taskMirror) write(ctx context.Context, status, lease string) error {
	st := m.state
	st.LeaseUntil = lease
	m.lastLease = lease
	u, text, err := taskstate.Write(st, m.redact, nil)
	if err != nil {
		return err
	}
	u.Status = status
	u.AddLabels = slices.DeleteFunc(slices.Clone(m.labels), func(l string) bool { return slices.Contains(m.confirmed, l) })
	u.RemoveLabels = slices.DeleteFunc(slices.Clone(m.confirmed), func(l string) bool { return slices.Contains(m.labels, l) })
	if text == m.written && status == "" && len(u.AddLabels)+len(u.RemoveLabels) == 0 {
		return nil // the task already holds exactly this (the run's last write after its close)
	}
	if err := m.tr.Update(ctx, m.taskID, u); err != nil {
		return err
	}
	m.confirmed, m.written = slices.Clone(m.labels), text
	m.leased(lease)
	if u.State != nil {
		m.state.InNotes = false // the notes hold people's text alone now
	}
	return nil
}
