package gitnorma

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
