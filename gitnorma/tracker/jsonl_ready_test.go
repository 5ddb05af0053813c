package tracker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// issue is one bd JSONL record for hand-written backlogs; deps are "type:target" pairs.
func issue(id, typ, status string, prio int, parent string, deps ...string) map[string]any {
	created := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	var records []map[string]any
	if parent != "" {
		deps = append([]string{"parent-child:" + parent}, deps...)
	}
	for _, d := range deps {
		kind, target, _ := strings.Cut(d, ":")
		records = append(records, map[string]any{
			"issue_id": id, "depends_on_id": target, "type": kind,
			"created_at": created, "created_by": "Norma Test", "metadata": "{}",
		})
	}
	rec := map[string]any{
		"_type": "issue", "id": id, "title": "title of " + id, "status": status, "priority": prio,
		"issue_type": typ, "created_at": created, "updated_at": created,
	}
	if status == StatusClosed {
		rec["closed_at"] = created
	}
	if records != nil {
		rec["dependencies"] = records
	}
	return rec
}

func writeBacklog(t *testing.T, path string, issues ...map[string]any) {
	t.Helper()
	var b strings.Builder
	for _, is := range issues {
		line, err := json.Marshal(is)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

func readyIDs(t *testing.T, j *JSONL) []string {
	t.Helper()
	ready, err := j.Ready(context.Background())
	require.NoError(t, err)
	ids := []string{}
	for _, task := range ready {
		ids = append(ids, task.ID)
	}
	return ids
}

func TestJSONLReady(t *testing.T) {
	j, path := newTestJSONL(t)
	writeBacklog(t, path,
		issue("norma-e", "epic", StatusOpen, 1, ""),
		issue("norma-e.1", "feature", StatusOpen, 2, "norma-e"),
		issue("norma-e.1.1", "task", StatusOpen, 2, "norma-e.1"),
		issue("norma-e.1.2", "task", StatusOpen, 1, "norma-e.1", "blocks:norma-e.1.1"),
		issue("norma-e.1.3", "task", StatusInProgress, 0, "norma-e.1"),
		issue("norma-e.1.4", "task", StatusOpen, 3, "norma-e.1", "related:norma-e.1.1"),
		issue("norma-e.1.5", "task", StatusOpen, 2, "norma-e.1", "blocks:norma-e.9"),
		issue("norma-e.1.6", "task", StatusOpen, 4, "norma-e.1", "waits-for:norma-e.1.1"),
		issue("norma-e.9", "task", StatusClosed, 0, "norma-e"),
		issue("norma-e.2", "feature", StatusDeferred, 2, "norma-e"),
		issue("norma-e.2.1", "task", StatusOpen, 0, "norma-e.2"),
		issue("norma-e.2.1.1", "task", StatusOpen, 0, "norma-e.2.1"),
		issue("norma-b", "task", StatusBlocked, 2, ""),
		issue("norma-b.1", "task", StatusOpen, 2, "norma-b"),
	)

	// Open epics and features are ready too, as in bd; priority first, then file order.
	assert.Equal(t, []string{"norma-e", "norma-e.1", "norma-e.1.1", "norma-e.1.5", "norma-e.1.4"}, readyIDs(t, j),
		"blocked by an open blocks/waits-for dep, in progress, closed, or under a deferred or blocked ancestor: not ready")

	require.NoError(t, j.SetStatus(context.Background(), "norma-e.1.1", StatusClosed, "done"))
	assert.Equal(t, []string{"norma-e", "norma-e.1.2", "norma-e.1", "norma-e.1.5", "norma-e.1.4", "norma-e.1.6"}, readyIDs(t, j),
		"closing the blocker releases its dependents")

	require.NoError(t, j.SetStatus(context.Background(), "norma-e.2", StatusOpen, ""))
	assert.Contains(t, readyIDs(t, j), "norma-e.2.1.1", "un-deferring the ancestor releases the whole subtree")

	ready, err := j.Ready(context.Background())
	require.NoError(t, err)
	for _, task := range ready {
		if task.ID == "norma-e.1.2" {
			assert.Equal(t, "norma-e.1", task.Parent)
			assert.Len(t, task.Dependencies, 2)
		}
	}
}

func TestJSONLReadyEmptyAndCycles(t *testing.T) {
	j, path := newTestJSONL(t)
	assert.Empty(t, readyIDs(t, j), "no file: nothing ready")

	// A parent cycle (hand-edited file) must not hang the ancestor walk.
	writeBacklog(t, path,
		issue("norma-x", "task", StatusOpen, 2, "norma-y"),
		issue("norma-y", "task", StatusOpen, 2, "norma-x"),
	)
	assert.Equal(t, []string{"norma-x", "norma-y"}, readyIDs(t, j))
}

func TestJSONLClaim(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.now = fakeClock(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))
	task := mustCreate(t, j, NewTask{Title: "work", Labels: []string{"go"}})
	other := mustCreate(t, j, NewTask{Title: "unclaimed"})

	claimed, err := j.Claim(ctx, task.ID, "Norma Test")
	require.NoError(t, err)
	assert.Equal(t, StatusInProgress, claimed.Status)
	assert.Equal(t, "Norma Test", claimed.Assignee)
	require.NotNil(t, claimed.StartedAt)
	assert.True(t, claimed.UpdatedAt.After(task.UpdatedAt))
	assert.Equal(t, []string{"go"}, claimed.Labels)

	got, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, claimed, got, "the claim is stored")

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = j.Claim(ctx, task.ID, "Someone Else")
	assert.ErrorIs(t, err, ErrClaimed)
	assert.ErrorContains(t, err, task.ID)
	assert.ErrorContains(t, err, StatusInProgress)

	_, err = j.Claim(ctx, "norma-nope", "Norma Test")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "norma-nope")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a lost claim writes nothing")

	require.NoError(t, j.SetStatus(ctx, other.ID, StatusClosed, "done"))
	_, err = j.Claim(ctx, other.ID, "Norma Test")
	assert.ErrorIs(t, err, ErrClaimed, "a closed task cannot be claimed")

	third := mustCreate(t, j, NewTask{Title: "anonymous"})
	anon, err := j.Claim(ctx, third.ID, "")
	require.NoError(t, err)
	assert.Equal(t, StatusInProgress, anon.Status)
	assert.Empty(t, anon.Assignee)
}

func TestJSONLUpdate(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.now = fakeClock(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))
	epic := mustCreate(t, j, NewTask{Title: "Epic", Type: "epic"})
	task := mustCreate(t, j, NewTask{
		Title: "work", Description: "desc", Design: "design", Acceptance: "- [ ] ok", Type: "bug",
		Priority: 1, Parent: epic.ID, Labels: []string{"go", "backend"}, Actor: "Norma Test",
	})
	require.NoError(t, j.Update(ctx, task.ID, Update{Notes: strPtr("old notes")}))

	require.NoError(t, j.Update(ctx, task.ID, Update{
		Notes:        strPtr(`{"phase":"do"}`),
		AddLabels:    []string{"norma-has-plan", " ", "alpha", "go"},
		RemoveLabels: []string{"backend", "missing"},
		Status:       StatusInProgress,
	}))
	got, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, `{"phase":"do"}`, got.Notes, "notes are replaced, not appended")
	assert.Equal(t, []string{"alpha", "go", "norma-has-plan"}, got.Labels)
	assert.Equal(t, StatusInProgress, got.Status)
	require.NotNil(t, got.StartedAt)
	assert.True(t, got.UpdatedAt.After(task.UpdatedAt))

	// Everything the update did not name is kept.
	assert.Equal(t, task.Title, got.Title)
	assert.Equal(t, "desc", got.Description)
	assert.Equal(t, "design", got.Design)
	assert.Equal(t, "- [ ] ok", got.AcceptanceCriteria)
	assert.Equal(t, "bug", got.IssueType)
	assert.Equal(t, 1, got.Priority)
	assert.Equal(t, "Norma Test", got.Owner)
	assert.Equal(t, "Norma Test", got.CreatedBy)
	assert.Equal(t, epic.ID, got.Parent)
	assert.Equal(t, task.Dependencies, got.Dependencies)
	assert.True(t, got.CreatedAt.Equal(task.CreatedAt))

	// No notes field: notes stay; labels only.
	require.NoError(t, j.Update(ctx, task.ID, Update{RemoveLabels: []string{"alpha"}}))
	got2, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, `{"phase":"do"}`, got2.Notes)
	assert.Equal(t, []string{"go", "norma-has-plan"}, got2.Labels)
	assert.Equal(t, StatusInProgress, got2.Status)
	assert.True(t, got2.StartedAt.Equal(*got.StartedAt))

	// An empty string clears the notes; closing through Update sets closed_at.
	require.NoError(t, j.Update(ctx, task.ID, Update{Notes: strPtr(""), Status: StatusClosed}))
	got3, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Empty(t, got3.Notes)
	assert.Equal(t, StatusClosed, got3.Status)
	assert.NotNil(t, got3.ClosedAt)

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	err = j.Update(ctx, task.ID, Update{Status: "done"})
	assert.ErrorContains(t, err, `invalid status "done"`)
	err = j.Update(ctx, "norma-nope", Update{Notes: strPtr("x")})
	assert.ErrorIs(t, err, ErrNotFound)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a refused update writes nothing")
}

func TestJSONLUpdateKeepsOtherTasksBytes(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	a := mustCreate(t, j, NewTask{Title: "a"})
	mustCreate(t, j, NewTask{Title: "b"})
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, j.Update(ctx, a.ID, Update{AddLabels: []string{"x"}}))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	beforeLines := strings.Split(string(before), "\n")
	afterLines := strings.Split(string(after), "\n")
	require.Len(t, afterLines, len(beforeLines))
	assert.NotEqual(t, beforeLines[0], afterLines[0])
	assert.Equal(t, beforeLines[1], afterLines[1], "untouched records keep their bytes")
}

func TestJSONLClaimRefusesAnotherAssignee(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	task, err := j.Create(ctx, NewTask{Title: "Taken", Priority: PriorityUnset})
	require.NoError(t, err)
	require.NoError(t, j.update(ctx, func(f *issueFile) error {
		rec := f.find(task.ID)
		rec.wire.Assignee, rec.dirty = "someone", true
		return nil
	}))
	_, err = j.Claim(ctx, task.ID, "me")
	assert.ErrorIs(t, err, ErrClaimed)
	claimed, err := j.Claim(ctx, task.ID, "someone")
	require.NoError(t, err)
	assert.Equal(t, StatusInProgress, claimed.Status)
}

func TestJSONLReadyExcludesChildrenOfABlockedParent(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	blocker, err := j.Create(ctx, NewTask{Title: "Blocker", Priority: PriorityUnset})
	require.NoError(t, err)
	feature, err := j.Create(ctx, NewTask{Title: "Feature", Type: "feature", Priority: PriorityUnset})
	require.NoError(t, err)
	child, err := j.Create(ctx, NewTask{Title: "Child", Parent: feature.ID, Priority: PriorityUnset})
	require.NoError(t, err)
	require.NoError(t, j.update(ctx, func(f *issueFile) error {
		rec := f.find(feature.ID)
		rec.deps = append(rec.deps, Dependency{IssueID: feature.ID, DependsOnID: blocker.ID, Type: "blocks", Metadata: "{}"})
		rec.wire.Dependencies, _ = encodeJSON(rec.deps)
		rec.dirty = true
		return nil
	}))
	ready, err := j.Ready(ctx)
	require.NoError(t, err)
	var ids []string
	for _, r := range ready {
		ids = append(ids, r.ID)
	}
	assert.Contains(t, ids, blocker.ID)
	assert.NotContains(t, ids, feature.ID)
	assert.NotContains(t, ids, child.ID)
}

// A task handed back (status open) is nobody's: the claim's assignee goes, as bd's
// --assignee "" clears it.
func TestJSONLHandBackClearsTheAssignee(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	task := mustCreate(t, j, NewTask{Title: "work"})
	_, err := j.Claim(ctx, task.ID, "Norma Test")
	require.NoError(t, err)
	require.NoError(t, j.Update(ctx, task.ID, Update{Status: StatusOpen}))
	got, err := j.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, StatusOpen, got.Status)
	assert.Empty(t, got.Assignee)
}
