package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// failingOnce fails the first n updates, as a backend that is briefly unavailable.
type failingOnce struct {
	tracker.Tracker
	mu    sync.Mutex
	fails int
}

func (f *failingOnce) Update(ctx context.Context, id string, u tracker.Update) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return errors.New("backend unavailable")
	}
	return f.Tracker.Update(ctx, id, u)
}

// TestTaskMirrorWritesInOrderAndCarriesFailedLabels records steps whose task updates reach
// the tracker in order, and the label change of a write that failed is carried by the next one.
func TestTaskMirrorWritesInOrderAndCarriesFailedLabels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jsonl := tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	task, err := jsonl.Create(ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset, Labels: []string{"user-label"}})
	require.NoError(t, err)
	tr := &failingOnce{Tracker: jsonl, fails: 1}
	m, err := newTaskMirror(tr, task, redact.New(nil))
	require.NoError(t, err)

	var mu sync.Mutex
	var failures []error
	failed := func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() }
	step := func(i int, role loop.Role) loop.StepRecord {
		return loop.StepRecord{RunID: "r-1", Index: i, Role: role, Iteration: 1, Status: "ok", EndedAt: time.Now(),
			Summary: string(role) + " done", Head: "abc"}
	}
	m.afterStep(ctx, step(1, loop.RolePlan), failed) // fails: has-plan not on the task yet
	m.afterStep(ctx, step(2, loop.RoleDo), failed)
	_, err = m.finishRun(ctx, "", "")
	require.NoError(t, err)

	mu.Lock()
	require.Len(t, failures, 1)
	mu.Unlock()
	got, err := jsonl.Get(ctx, task.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"user-label", LabelHasPlan, LabelHasDo}, got.Labels,
		"the failed write's label came with the next one; the user's label is kept")
	st, err := taskstate.Decode(got.Notes)
	require.NoError(t, err)
	require.Equal(t, 2, st.Step, "the last step's state is on the task")
	require.Len(t, st.Journal, 2)
}

// gated says when an update has begun, holds every update until released, and records the
// step each one carried.
type gated struct {
	tracker.Tracker
	entered, release chan struct{}
	mu               sync.Mutex
	steps            []int
}

func (g *gated) Update(ctx context.Context, id string, u tracker.Update) error {
	g.entered <- struct{}{}
	<-g.release
	if st, err := taskstate.Decode(*u.Notes); err == nil {
		g.mu.Lock()
		g.steps = append(g.steps, st.Step)
		g.mu.Unlock()
	}
	return g.Tracker.Update(ctx, id, u)
}

func (g *gated) written() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.steps)
}

// mirrorFixture is a task in an embedded backlog, mirrored through a gated tracker.
type mirrorFixture struct {
	t     *testing.T
	ctx   context.Context
	jsonl *tracker.JSONL
	task  tracker.Task
	tr    *gated
	m     *taskMirror
}

// newMirrorFixture gates the tracker's writes; released lets them through from the start.
func newMirrorFixture(t *testing.T, released bool) *mirrorFixture {
	f := &mirrorFixture{t: t, ctx: context.Background()}
	dir := t.TempDir()
	f.jsonl = tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	var err error
	f.task, err = f.jsonl.Create(f.ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset})
	require.NoError(t, err)
	f.tr = &gated{Tracker: f.jsonl, entered: make(chan struct{}, 8), release: make(chan struct{})}
	if released {
		close(f.tr.release)
	}
	f.m, err = newTaskMirror(f.tr, f.task, redact.New(nil))
	require.NoError(t, err)
	return f
}

// after records step i of the first iteration; builtin marks a built-in Plan or Act.
func (f *mirrorFixture) after(i int, role loop.Role, builtin bool, out loop.Output) {
	f.m.afterStep(f.ctx, loop.StepRecord{RunID: "r-1", Index: i, Role: role, Iteration: 1, Status: "ok",
		EndedAt: time.Now(), Summary: string(role) + " done", Head: "abc", Builtin: builtin, Output: out},
		func(err error) { f.t.Errorf("unexpected failure: %v", err) })
}

// stored is the task's labels and state as the backlog has them.
func (f *mirrorFixture) stored() ([]string, taskstate.State) {
	got, err := f.jsonl.Get(f.ctx, f.task.ID)
	require.NoError(f.t, err)
	st, err := taskstate.Decode(got.Notes)
	require.NoError(f.t, err)
	return got.Labels, st
}

// A built-in Plan or Act is not written on its own (run again, it decides the same), nor is a
// Check (never resumed): its journal line and labels ride on the next step's update, or on
// the run's last write.
func TestTaskMirrorWritesBuiltinStepsWithTheNext(t *testing.T) {
	f := newMirrorFixture(t, true)
	labels := func() []string { l, _ := f.stored(); return l }
	f.after(1, loop.RolePlan, true, loop.Output{})
	assert.Empty(t, f.tr.written(), "nothing written for the built-in plan")
	f.after(2, loop.RoleDo, false, loop.Output{})
	assert.ElementsMatch(t, []string{LabelHasPlan, LabelHasDo}, labels())
	f.after(3, loop.RoleCheck, false, loop.Output{})
	f.after(4, loop.RoleAct, true, loop.Output{})
	assert.ElementsMatch(t, []string{LabelHasPlan, LabelHasDo}, labels(), "neither the check nor the act is written yet")
	_, err := f.m.finishRun(f.ctx, "", "")
	require.NoError(t, err)

	got, st := f.stored()
	assert.Empty(t, got, "the act's end of the iteration came with the run's last write")
	assert.Equal(t, []int{2, 4}, f.tr.written())
	require.Len(t, st.Journal, 4)
}

// An Act that closes the task is written at once, so the landing that follows closes a task
// whose resume labels are already gone.
func TestTaskMirrorWritesAClosingAct(t *testing.T) {
	f := newMirrorFixture(t, true)
	f.after(1, loop.RolePlan, true, loop.Output{})
	f.after(2, loop.RoleDo, false, loop.Output{})
	f.after(3, loop.RoleCheck, false, loop.Output{})
	f.after(4, loop.RoleAct, true, loop.Output{Act: &loop.Act{Decision: loop.DecisionClose}})
	labels, st := f.stored()
	assert.Empty(t, labels, "the closing act's write removed the resume labels")
	assert.Len(t, st.Journal, 4)
}

// A dead run's steps that never reached the task state are added to the journal once, in time
// order, and go out with the next write.
func TestTaskMirrorCatchesUpADeadRunsJournal(t *testing.T) {
	f := newMirrorFixture(t, true)
	line := func(run string, step int, ts string) taskstate.JournalLine {
		return taskstate.JournalLine{TS: "2026-11-22T10:00:0" + ts + ".000Z", Run: run, Step: step, Role: "plan", Status: "ok"}
	}
	f.m.state.Journal = []taskstate.JournalLine{line("r-0", 1, "1"), line("r-0", 2, "3")}
	f.m.catchUp([]taskstate.JournalLine{line("r-0", 2, "3"), line("r-dead", 1, "2"), line("r-0", 3, "4"), line("r-dead", 1, "2")})
	f.after(5, loop.RoleDo, false, loop.Output{})

	_, st := f.stored()
	var got []string
	for _, l := range st.Journal {
		got = append(got, fmt.Sprintf("%s/%d", l.Run, l.Step))
	}
	assert.Equal(t, []string{"r-0/1", "r-dead/1", "r-0/2", "r-0/3", "r-1/5"}, got, "each line once, in time order")
}

// A line older than the journal's oldest may already be counted in the folded summary: it is
// not added back.
func TestTaskMirrorCatchUpSkipsFoldedLines(t *testing.T) {
	f := newMirrorFixture(t, true)
	f.m.state.Folded = "12 older steps folded"
	f.m.state.Journal = []taskstate.JournalLine{{TS: "2026-11-22T10:00:05.000Z", Run: "r-0", Step: 7}}
	f.m.catchUp([]taskstate.JournalLine{{TS: "2026-11-22T10:00:01.000Z", Run: "r-dead", Step: 1}, {TS: "2026-11-22T10:00:06.000Z", Run: "r-dead", Step: 2}})
	require.Len(t, f.m.state.Journal, 2)
	assert.Equal(t, 2, f.m.state.Journal[1].Step, "only the line newer than the fold came back")
}
