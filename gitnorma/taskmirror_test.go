package gitnorma

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestTaskMirrorWritesInOrderAndCarriesFailedLabels records steps whose task updates run in
// the background: they reach the tracker in order, finishRun waits for them, and the label
// change of a write that failed is carried by the next one.
func TestTaskMirrorWritesInOrderAndCarriesFailedLabels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jsonl := tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	task, err := jsonl.Create(ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset, Labels: []string{"user-label"}})
	require.NoError(t, err)
	tr := &failingOnce{Tracker: jsonl, fails: 1}
	m, err := newTaskMirror(tr, task, newRedactor(nil))
	require.NoError(t, err)

	var mu sync.Mutex
	var failures []error
	failed := func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() }
	step := func(i int, role loop.Role) loop.StepRecord {
		return loop.StepRecord{RunID: "r-1", Index: i, Role: role, Iteration: 1, Status: "ok", EndedAt: time.Now(),
			Summary: string(role) + " done", Head: "abc"}
	}
	m.afterStep(ctx, step(1, loop.RolePlan), failed) // fails: has-plan not on the task yet
	m.queue.wait()                                   // (queued behind it, step 2 would replace it)
	m.afterStep(ctx, step(2, loop.RoleDo), failed)
	require.NoError(t, m.finishRun(ctx, "", ""))

	mu.Lock()
	require.Len(t, failures, 1)
	mu.Unlock()
	got, err := jsonl.Get(ctx, task.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"user-label", LabelHasPlan, LabelHasDo}, got.Labels,
		"the failed write's label came with the next one; the user's label is kept")
	st, err := DecodeTaskState(got.Notes)
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
	if st, err := DecodeTaskState(*u.Notes); err == nil {
		g.mu.Lock()
		g.steps = append(g.steps, st.Step)
		g.mu.Unlock()
	}
	return g.Tracker.Update(ctx, id, u)
}

// When the writes fall behind, a queued update that a newer one supersedes is dropped: the
// newer one carries the whole state and every label change since the last write.
func TestTaskMirrorSkipsToTheLatestStateWhenBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jsonl := tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	task, err := jsonl.Create(ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset})
	require.NoError(t, err)
	tr := &gated{Tracker: jsonl, entered: make(chan struct{}, 8), release: make(chan struct{})}
	m, err := newTaskMirror(tr, task, newRedactor(nil))
	require.NoError(t, err)
	failed := func(err error) { t.Errorf("unexpected failure: %v", err) }
	step := func(i int, role loop.Role) loop.StepRecord {
		return loop.StepRecord{RunID: "r-1", Index: i, Role: role, Iteration: 1, Status: "ok", EndedAt: time.Now(),
			Summary: string(role) + " done", Head: "abc"}
	}
	m.afterStep(ctx, step(1, loop.RolePlan), failed)
	<-tr.entered // the first write is under way, held by the gate
	m.afterStep(ctx, step(2, loop.RoleDo), failed)
	m.afterStep(ctx, step(3, loop.RoleCheck), failed)
	close(tr.release)
	require.NoError(t, m.finishRun(ctx, "", ""))

	tr.mu.Lock()
	require.Equal(t, []int{1, 3, 3}, tr.steps, "step 2's update was dropped for step 3's; then the run's last write")
	tr.mu.Unlock()
	got, err := jsonl.Get(ctx, task.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{LabelHasPlan, LabelHasDo, LabelHasCheck}, got.Labels, "step 2's label came with step 3's write")
	st, err := DecodeTaskState(got.Notes)
	require.NoError(t, err)
	require.Len(t, st.Journal, 3, "every step is in the journal")
}

// A built-in Plan or Act is not written on its own (run again, it decides the same): its
// journal line and labels ride on the next step's update, or on the run's last write.
func TestTaskMirrorWritesBuiltinStepsWithTheNext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jsonl := tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	task, err := jsonl.Create(ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset})
	require.NoError(t, err)
	tr := &gated{Tracker: jsonl, entered: make(chan struct{}, 8), release: make(chan struct{})}
	close(tr.release)
	m, err := newTaskMirror(tr, task, newRedactor(nil))
	require.NoError(t, err)
	failed := func(err error) { t.Errorf("unexpected failure: %v", err) }
	step := func(i int, role loop.Role, builtin bool) loop.StepRecord {
		return loop.StepRecord{RunID: "r-1", Index: i, Role: role, Iteration: 1, Status: "ok", EndedAt: time.Now(),
			Summary: string(role) + " done", Head: "abc", Builtin: builtin}
	}
	labels := func() []string {
		got, err := jsonl.Get(ctx, task.ID)
		require.NoError(t, err)
		return got.Labels
	}
	m.afterStep(ctx, step(1, loop.RolePlan, true), failed)
	m.queue.wait()
	assert.Empty(t, labels(), "nothing written for the built-in plan")
	m.afterStep(ctx, step(2, loop.RoleDo, false), failed)
	m.queue.wait()
	assert.ElementsMatch(t, []string{LabelHasPlan, LabelHasDo}, labels())
	m.afterStep(ctx, step(3, loop.RoleCheck, false), failed)
	m.afterStep(ctx, step(4, loop.RoleAct, true), failed)
	m.queue.wait()
	assert.ElementsMatch(t, []string{LabelHasPlan, LabelHasDo, LabelHasCheck}, labels(), "the act is not written yet")
	require.NoError(t, m.finishRun(ctx, "", ""))

	assert.Empty(t, labels(), "the act's end of the iteration came with the run's last write")
	tr.mu.Lock()
	assert.Equal(t, []int{2, 3, 4}, tr.steps)
	tr.mu.Unlock()
	got, err := jsonl.Get(ctx, task.ID)
	require.NoError(t, err)
	st, err := DecodeTaskState(got.Notes)
	require.NoError(t, err)
	require.Len(t, st.Journal, 4)
}

// An Act that closes the task is written at once, so the landing that follows closes a task
// whose resume labels are already gone.
func TestTaskMirrorWritesAClosingAct(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	jsonl := tracker.NewJSONL(filepath.Join(dir, "issues.jsonl"), filepath.Join(dir, "tasks.lock"), "nm")
	task, err := jsonl.Create(ctx, tracker.NewTask{Title: "mirror me", Priority: tracker.PriorityUnset})
	require.NoError(t, err)
	m, err := newTaskMirror(jsonl, task, newRedactor(nil))
	require.NoError(t, err)
	failed := func(err error) { t.Errorf("unexpected failure: %v", err) }
	for i, role := range []loop.Role{loop.RolePlan, loop.RoleDo, loop.RoleCheck, loop.RoleAct} {
		rec := loop.StepRecord{RunID: "r-1", Index: i + 1, Role: role, Iteration: 1, Status: "ok", EndedAt: time.Now(),
			Summary: string(role) + " done", Head: "abc", Builtin: role == loop.RolePlan || role == loop.RoleAct}
		if role == loop.RoleAct {
			rec.Output.Act = &loop.Act{Decision: loop.DecisionClose}
		}
		m.afterStep(ctx, rec, failed)
	}
	m.queue.wait()
	got, err := jsonl.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Empty(t, got.Labels, "the closing act's write removed the resume labels")
	st, err := DecodeTaskState(got.Notes)
	require.NoError(t, err)
	assert.Len(t, st.Journal, 4)
}
