package tracker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDuplicateIDRefused: a merge that keeps both versions of a task's line (a union merge
// driver, or a conflict resolved by keeping both sides) leaves the same id twice, one of them
// closed. Selection must not offer the task from its open copy, and a claim must not start a
// run on it: the backlog names both lines and says to keep one.
func TestDuplicateIDRefused(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.WithIndex(filepath.Join(t.TempDir(), "heads"), noVerify)
	id := mustCreate(t, j, NewTask{Title: "Shared"}).ID
	open, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, j.SetStatus(ctx, id, StatusClosed, "done by a teammate"))
	closed, err := os.ReadFile(path)
	require.NoError(t, err)
	// Ours (still open) first, theirs (closed) after it.
	require.NoError(t, os.WriteFile(path, append(open, closed...), 0o644))

	heads, err := j.Heads(ctx)
	if err == nil {
		for _, h := range heads {
			assert.False(t, h.ID == id && h.Ready, "a task closed in one of its two lines is offered as ready")
		}
		t.Fatalf("Heads accepted task %s twice", id)
	}
	assert.Contains(t, err.Error(), id)
	assert.Contains(t, err.Error(), "lines 1 and 2 (a merge kept two versions of it)")

	_, err = j.Get(ctx, id)
	require.Error(t, err, "one task read alone meets its second line too")
	assert.Contains(t, err.Error(), "lines 1 and 2")

	_, err = j.Claim(ctx, id, "me")
	require.Error(t, err, "claimed a task whose other line says closed")
	assert.True(t, strings.Contains(err.Error(), "lines 1 and 2"), err.Error())

	ready, err := j.Ready(ctx)
	require.Error(t, err)
	assert.Empty(t, ready)
}

// TestSameChildIDOnTwoBranches: two people each add a first subtask to one epic on their own
// branch; both are numbered <epic>.1, and a merge that keeps both lines holds two tasks with
// one id. The error says so, rather than to remove one of them.
func TestSameChildIDOnTwoBranches(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.WithIndex(filepath.Join(t.TempDir(), "heads"), noVerify)
	epic := mustCreate(t, j, NewTask{Title: "Epic", Type: "epic"}).ID
	base, err := os.ReadFile(path)
	require.NoError(t, err)
	mine := mustCreate(t, j, NewTask{Title: "Mine", Parent: epic}).ID
	ours, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, base, 0o644))
	theirs := mustCreate(t, j, NewTask{Title: "Theirs", Parent: epic}).ID
	require.Equal(t, mine, theirs)
	merged, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(ours, merged[len(base):]...), 0o644))

	_, err = j.Heads(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "two tasks have the id "+mine)
	_, err = j.Create(ctx, NewTask{Title: "Third", Parent: epic})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "two tasks have the id "+mine)
}

// TestDuplicateIDGetMany: reading many tasks at once (a page of selection) decodes every
// record, and meets the duplicate too.
func TestDuplicateIDGetMany(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	var ids []string
	for range manyIDs + 1 {
		ids = append(ids, mustCreate(t, j, NewTask{Title: "T"}).ID)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(data), "\n")
	require.NoError(t, os.WriteFile(path, append(data, first+"\n"...), 0o644))
	_, err = j.GetMany(ctx, ids)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "two versions")
}

// Two lines with one id and no creation time: nothing tells two versions of one task from two
// tasks, so the error does not say to remove a line (which could delete a real task).
func TestDuplicateIDWithoutCreationTimes(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	line := func(title string) string {
		return `{"_type":"issue","id":"norma-hand","title":"` + title + `","status":"open","priority":2,"issue_type":"task"}` + "\n"
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(line("one")+line("two")), 0o644))
	_, err := j.Heads(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "if they are two tasks, give one of them an id no other task has")
}
