package tracker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestJSONL returns a backend in a fresh temp repo layout and the issues.jsonl path.
func newTestJSONL(t *testing.T) (*JSONL, string) {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, ".beads", "issues.jsonl")
	return NewJSONL(path, filepath.Join(root, ".git", "norma", "tracker.lock"), "norma"), path
}

func mustCreate(t *testing.T, j *JSONL, nt NewTask) Task {
	t.Helper()
	if nt.Priority == 0 {
		nt.Priority = PriorityUnset
	}
	task, err := j.Create(context.Background(), nt)
	require.NoError(t, err)
	return task
}

func TestCreateGetList(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)

	a := mustCreate(t, j, NewTask{
		Title: "  Task A  ", Description: "desc", Design: "design", Acceptance: "- [ ] works",
		Labels: []string{"go", "backend", "go", " "}, Actor: "Norma Test",
	})
	b := mustCreate(t, j, NewTask{Title: "Task B", Type: "bug", Priority: 1})

	assert.Regexp(t, regexp.MustCompile(`^norma-[a-z0-9]{4}$`), a.ID)
	assert.NoError(t, ValidateID("norma", a.ID))
	assert.NotEqual(t, a.ID, b.ID)
	assert.Equal(t, "Task A", a.Title)
	assert.Equal(t, StatusOpen, a.Status)
	assert.Equal(t, "task", a.IssueType)
	assert.Equal(t, DefaultPriority, a.Priority)
	assert.Equal(t, []string{"backend", "go"}, a.Labels)
	assert.Equal(t, "Norma Test", a.CreatedBy)
	assert.Equal(t, "Norma Test", a.Owner)
	assert.Equal(t, "- [ ] works", a.AcceptanceCriteria)
	assert.Equal(t, time.UTC, a.CreatedAt.Location())
	assert.Equal(t, a.CreatedAt, a.UpdatedAt)
	assert.Nil(t, a.StartedAt)
	assert.Nil(t, a.ClosedAt)
	assert.Empty(t, a.Parent)
	assert.Equal(t, "bug", b.IssueType)
	assert.Equal(t, 1, b.Priority)
	assert.FileExists(t, path)

	got, err := j.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.ID, got.ID)
	assert.True(t, a.CreatedAt.Equal(got.CreatedAt))
	assert.Equal(t, a.Labels, got.Labels)

	list, err := j.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{a.ID, b.ID}, []string{list[0].ID, list[1].ID})

	_, err = j.Get(ctx, "norma-zzzz")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "norma-zzzz")
}

func TestMissingFileIsEmptyBacklog(t *testing.T) {
	j, path := newTestJSONL(t)
	list, err := j.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, list)
	assert.NoFileExists(t, path)
}

func TestCreateChildren(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	epic := mustCreate(t, j, NewTask{Title: "Epic", Type: "epic", Actor: "me"})
	c1 := mustCreate(t, j, NewTask{Title: "one", Parent: epic.ID, Actor: "me"})
	c2 := mustCreate(t, j, NewTask{Title: "two", Parent: epic.ID})
	c11 := mustCreate(t, j, NewTask{Title: "one.one", Parent: c1.ID})
	c3 := mustCreate(t, j, NewTask{Title: "three", Parent: epic.ID})

	assert.Equal(t, epic.ID+".1", c1.ID)
	assert.Equal(t, epic.ID+".2", c2.ID)
	assert.Equal(t, epic.ID+".1.1", c11.ID)
	assert.Equal(t, epic.ID+".3", c3.ID)
	assert.NoError(t, ValidateID("norma", c11.ID))

	got, err := j.Get(ctx, c1.ID)
	require.NoError(t, err)
	assert.Equal(t, epic.ID, got.Parent)
	require.Len(t, got.Dependencies, 1)
	dep := got.Dependencies[0]
	assert.Equal(t, c1.ID, dep.IssueID)
	assert.Equal(t, epic.ID, dep.DependsOnID)
	assert.Equal(t, "parent-child", dep.Type)
	assert.Equal(t, "me", dep.CreatedBy)
	assert.Equal(t, "{}", dep.Metadata)
	assert.False(t, dep.CreatedAt.IsZero())

	got, err = j.Get(ctx, c11.ID)
	require.NoError(t, err)
	assert.Equal(t, c1.ID, got.Parent)
}

func TestCreateUnknownParentWritesNothing(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)

	_, err := j.Create(ctx, NewTask{Title: "orphan", Parent: "norma-nope", Priority: PriorityUnset})
	require.Error(t, err)
	assert.ErrorContains(t, err, "norma-nope")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.NoFileExists(t, path)

	mustCreate(t, j, NewTask{Title: "real"})
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = j.Create(ctx, NewTask{Title: "orphan", Parent: "norma-nope", Priority: PriorityUnset})
	require.Error(t, err)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestCreateValidation(t *testing.T) {
	tests := []struct {
		name    string
		task    NewTask
		wantErr string
		check   func(t *testing.T, got Task)
	}{
		{name: "empty title", task: NewTask{Priority: PriorityUnset}, wantErr: "title is empty"},
		{name: "blank title", task: NewTask{Title: " \t\n", Priority: PriorityUnset}, wantErr: "title is empty"},
		{name: "docs is not a bd type", task: NewTask{Title: "x", Type: "docs", Priority: PriorityUnset}, wantErr: `invalid task type "docs"`},
		{name: "internal bd type", task: NewTask{Title: "x", Type: "molecule", Priority: PriorityUnset}, wantErr: "invalid task type"},
		{name: "priority too high", task: NewTask{Title: "x", Priority: 5}, wantErr: "invalid priority 5"},
		{name: "priority negative", task: NewTask{Title: "x", Priority: -2}, wantErr: "invalid priority -2"},
		{name: "priority 0 is highest, not default", task: NewTask{Title: "x", Priority: 0},
			check: func(t *testing.T, got Task) { assert.Equal(t, 0, got.Priority) }},
		{name: "unset priority defaults to 2", task: NewTask{Title: "x", Priority: PriorityUnset},
			check: func(t *testing.T, got Task) { assert.Equal(t, 2, got.Priority) }},
		{name: "priority 4", task: NewTask{Title: "x", Priority: 4},
			check: func(t *testing.T, got Task) { assert.Equal(t, 4, got.Priority) }},
		{name: "milestone type", task: NewTask{Title: "x", Type: "milestone", Priority: PriorityUnset},
			check: func(t *testing.T, got Task) { assert.Equal(t, "milestone", got.IssueType) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, path := newTestJSONL(t)
			got, err := j.Create(context.Background(), tc.task)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.NoFileExists(t, path)
				return
			}
			require.NoError(t, err)
			tc.check(t, got)
		})
	}
}

func TestCreateRefusesBadPrefix(t *testing.T) {
	root := t.TempDir()
	j := NewJSONL(filepath.Join(root, "issues.jsonl"), filepath.Join(root, "lock"), "Bad_")
	_, err := j.Create(context.Background(), NewTask{Title: "x", Priority: PriorityUnset})
	assert.ErrorContains(t, err, "invalid task id prefix")
}

// fakeClock hands out strictly increasing whole seconds, as bd's DATETIME columns would.
func fakeClock(start time.Time) func() time.Time {
	now := start
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

func TestSetStatusTransitions(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	j.now = fakeClock(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))
	task := mustCreate(t, j, NewTask{Title: "work"})

	get := func() Task {
		got, err := j.Get(ctx, task.ID)
		require.NoError(t, err)
		return got
	}

	require.NoError(t, j.SetStatus(ctx, task.ID, StatusInProgress, ""))
	started := get()
	assert.Equal(t, StatusInProgress, started.Status)
	require.NotNil(t, started.StartedAt)
	assert.True(t, started.UpdatedAt.After(task.UpdatedAt))
	assert.True(t, started.StartedAt.Equal(started.UpdatedAt))
	assert.Nil(t, started.ClosedAt)

	require.NoError(t, j.SetStatus(ctx, task.ID, StatusInProgress, ""))
	again := get()
	assert.True(t, again.StartedAt.Equal(*started.StartedAt), "re-claiming keeps started_at")
	assert.True(t, again.UpdatedAt.After(started.UpdatedAt))

	require.NoError(t, j.SetStatus(ctx, task.ID, StatusClosed, "Done by git-norma"))
	closed := get()
	assert.Equal(t, StatusClosed, closed.Status)
	require.NotNil(t, closed.ClosedAt)
	assert.True(t, closed.ClosedAt.Equal(closed.UpdatedAt))
	assert.Equal(t, "Done by git-norma", closed.CloseReason)
	assert.True(t, closed.StartedAt.Equal(*started.StartedAt), "closing keeps started_at")

	require.NoError(t, j.SetStatus(ctx, task.ID, StatusOpen, "ignored"))
	reopened := get()
	assert.Equal(t, StatusOpen, reopened.Status)
	assert.Nil(t, reopened.ClosedAt)
	assert.Empty(t, reopened.CloseReason)
	assert.True(t, reopened.UpdatedAt.After(closed.UpdatedAt))

	require.NoError(t, j.SetStatus(ctx, task.ID, StatusClosed, "again"))
	require.NoError(t, j.SetStatus(ctx, task.ID, StatusDeferred, ""))
	deferred := get()
	assert.Nil(t, deferred.ClosedAt, "bd forbids closed_at on a non-closed issue")
	assert.Empty(t, deferred.CloseReason)
}

func TestSetStatusErrors(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	task := mustCreate(t, j, NewTask{Title: "work"})
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	err = j.SetStatus(ctx, task.ID, "done", "")
	assert.ErrorContains(t, err, `invalid status "done"`)

	err = j.SetStatus(ctx, "norma-nope", StatusClosed, "")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "norma-nope")

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestUpdatedAtChangesWithFrozenClock(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	frozen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	j.now = func() time.Time { return frozen }
	task := mustCreate(t, j, NewTask{Title: "x"})
	require.NoError(t, j.SetStatus(ctx, task.ID, StatusBlocked, ""))
	got, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.True(t, got.UpdatedAt.After(task.UpdatedAt))
}

func TestLockWaitHonoursContext(t *testing.T) {
	j, path := newTestJSONL(t)
	unlock, err := j.lock(context.Background(), flock.Exclusive)
	require.NoError(t, err)
	defer unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = j.Create(ctx, NewTask{Title: "x", Priority: PriorityUnset})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NoFileExists(t, path)
}

// TestTasksOutliveTheReadBuffer: the buffer a read used is used again by the next one; nothing
// a read returned may still point into it.
func TestTasksOutliveTheReadBuffer(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	a := mustCreate(t, j, NewTask{Title: strings.Repeat("a", 200), Labels: []string{"la"}, Description: strings.Repeat("A", 300)})
	b := mustCreate(t, j, NewTask{Title: strings.Repeat("b", 200), Labels: []string{"lb"}, Description: strings.Repeat("B", 300)})
	gotA, err := j.Get(ctx, a.ID)
	require.NoError(t, err)
	listed, err := j.List(ctx)
	require.NoError(t, err)
	require.NoError(t, j.Update(ctx, b.ID, Update{AddLabels: []string{"x"}}))
	_, err = j.Get(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, a.Title, gotA.Title)
	assert.Equal(t, a.Description, gotA.Description)
	assert.Equal(t, []string{"la"}, gotA.Labels)
	assert.Equal(t, []string{a.Title, b.Title}, []string{listed[0].Title, listed[1].Title})
}

// TestGetMany: the tasks come back in the order asked, whether searched one by one or read by
// decoding every record, and a missing one is ErrNotFound.
func TestGetMany(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	var ids []string
	for i := range manyIDs + 5 {
		ids = append(ids, mustCreate(t, j, NewTask{Title: fmt.Sprintf("task %d", i)}).ID)
	}
	slices.Reverse(ids)
	for _, n := range []int{3, manyIDs + 5} {
		tasks, err := j.GetMany(ctx, ids[:n])
		require.NoError(t, err)
		require.Len(t, tasks, n)
		for i, task := range tasks {
			assert.Equal(t, ids[i], task.ID)
		}
		_, err = j.GetMany(ctx, append(slices.Clone(ids[:n]), "norma-nope"))
		assert.ErrorIs(t, err, ErrNotFound)
	}
}
