package tracker

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		name, prefix, id string
		wantErr          string
	}{
		{name: "top level", prefix: "norma", id: "norma-a3f2"},
		{name: "child", prefix: "norma", id: "norma-a3f2.1"},
		{name: "nested child", prefix: "norma", id: "norma-abc.1.2"},
		{name: "dashed prefix", prefix: "my-app", id: "my-app-x9"},
		{name: "empty", prefix: "norma", id: "", wantErr: "task id is empty"},
		{name: "path traversal", prefix: "norma", id: "../x",
			wantErr: `invalid task id "../x": task ids look like norma-a3f2 or norma-a3f2.1`},
		{name: "upper case", prefix: "norma", id: "NORMA-1", wantErr: `invalid task id "NORMA-1"`},
		{name: "no hash", prefix: "norma", id: "norma-", wantErr: "invalid task id"},
		{name: "space", prefix: "norma", id: "norma-a b", wantErr: "invalid task id"},
		{name: "non-numeric child", prefix: "norma", id: "norma-abc.x", wantErr: "invalid task id"},
		{name: "trailing dot", prefix: "norma", id: "norma-abc.", wantErr: "invalid task id"},
		{name: "other prefix", prefix: "norma", id: "other-abc", wantErr: "invalid task id"},
		{name: "newline", prefix: "norma", id: "norma-abc\n", wantErr: "invalid task id"},
		{name: "prefix is quoted", prefix: "a.b", id: "axb-abc", wantErr: "invalid task id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateID(tc.prefix, tc.id)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestValidPrefix(t *testing.T) {
	for p, want := range map[string]bool{
		"norma": true, "my-app": true, "a1": true, "x": true,
		"": false, "norma-": false, "1abc": false, "Norma": false, "a_b": false, "a.b": false, "-a": false,
	} {
		assert.Equal(t, want, ValidPrefix(p), "prefix %q", p)
	}
}

func TestValidStatusAndType(t *testing.T) {
	for _, s := range []string{"open", "in_progress", "blocked", "deferred", "closed", "pinned", "hooked"} {
		assert.True(t, ValidStatus(s), s)
	}
	for _, s := range []string{"", "done", "tombstone", "OPEN"} {
		assert.False(t, ValidStatus(s), s)
	}
	for _, s := range []string{"task", "bug", "feature", "epic", "chore", "decision", "spike", "story", "milestone"} {
		assert.True(t, ValidType(s), s)
	}
	for _, s := range []string{"", "docs", "message", "molecule", "gate", "event", "Task"} {
		assert.False(t, ValidType(s), s)
	}
}

// constantReader always yields the same byte, so every random id of one length is the same.
type constantReader byte

func (c constantReader) Read(p []byte) (int, error) {
	copy(p, bytes.Repeat([]byte{byte(c)}, len(p)))
	return len(p), nil
}

func TestTopLevelIDGrowsOnCollision(t *testing.T) {
	j, _ := newTestJSONL(t)
	j.random = constantReader(10) // base36 digit 'a'
	first := mustCreate(t, j, NewTask{Title: "one"})
	second := mustCreate(t, j, NewTask{Title: "two"})
	third := mustCreate(t, j, NewTask{Title: "three"})
	assert.Equal(t, "norma-aaaa", first.ID)
	assert.Equal(t, "norma-aaaaa", second.ID)
	assert.Equal(t, "norma-aaaaaa", third.ID)
}

func TestTopLevelIDSkipsOrphanedChildren(t *testing.T) {
	assert.True(t, idTaken("norma-abcd", []string{"norma-abcd.1"}))
	assert.False(t, idTaken("norma-abc", []string{"norma-abcd"}))
}

func TestNextChildID(t *testing.T) {
	ids := []string{"norma-p", "norma-p.1", "norma-p.2.7", "norma-p.10x", "norma-px.9", "norma-p.1.5"}
	assert.Equal(t, "norma-p.3", nextChildID("norma-p", ids))
	assert.Equal(t, "norma-p.1.6", nextChildID("norma-p.1", ids))
	assert.Equal(t, "norma-q.1", nextChildID("norma-q", ids))
}

func TestRandomIDsAreBase36(t *testing.T) {
	j, _ := newTestJSONL(t)
	for range 20 {
		task, err := j.Create(context.Background(), NewTask{Title: "x", Priority: PriorityUnset})
		require.NoError(t, err)
		assert.Regexp(t, `^norma-[0-9a-z]{4}$`, task.ID)
	}
}

func TestValidateBDID(t *testing.T) {
	for _, id := range []string{"norma-a3f", "proj-9oo", "my-proj-9oo.1.2", "bd_1x-k2", "My_Repo-abc"} {
		assert.NoError(t, ValidateBDID(id), id)
	}
	for _, id := range []string{"", "-abc", "proj", "../x-abc", "proj-a/b", "proj-abc.lock", "proj-ABC", "pro j-abc", "proj-a..b", "proj-abc.x"} {
		assert.Error(t, ValidateBDID(id), id)
	}
}
