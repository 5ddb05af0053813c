package tracker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headsFixture is a backlog with a parent, a blocker, a closed task and a line that is not a
// task, and an index beside it.
func headsFixture(t *testing.T) (*JSONL, string, map[string]string) {
	t.Helper()
	ctx := context.Background()
	j, path := newTestJSONL(t)
	j.WithIndex(filepath.Join(t.TempDir(), "heads"), func(d string) bool { return strings.Contains(d, "Verify:") })
	ids := map[string]string{}
	ids["epic"] = mustCreate(t, j, NewTask{Title: "Epic", Type: "epic"}).ID
	ids["child"] = mustCreate(t, j, NewTask{Title: "Child", Parent: ids["epic"], Description: "Verify: true"}).ID
	ids["blocker"] = mustCreate(t, j, NewTask{Title: "Blocker"}).ID
	ids["waits"] = mustCreate(t, j, NewTask{Title: "Waits", Labels: []string{"x"}}).ID
	ids["done"] = mustCreate(t, j, NewTask{Title: "Done"}).ID
	require.NoError(t, j.AddDependency(ctx, ids["waits"], ids["blocker"], "blocks"))
	require.NoError(t, j.SetStatus(ctx, ids["done"], StatusClosed, "done"))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"_type":"memory","key":"k"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return j, path, ids
}

// expectedHeads are the heads computed from the tasks themselves, as selection would without
// an index.
func expectedHeads(t *testing.T, j *JSONL) []Head {
	t.Helper()
	tasks, err := j.List(context.Background())
	require.NoError(t, err)
	var heads []Head
	for _, task := range tasks {
		heads = append(heads, HeadOf(task, j.verify))
	}
	MarkReady(heads)
	MarkChildren(heads)
	return heads
}

// TestHeadsIndex: the index answers what the tasks say, from the file as it is after every
// kind of change, and a broken index or a malformed line never yields stale heads.
func TestHeadsIndex(t *testing.T) {
	ctx := context.Background()
	j, path, ids := headsFixture(t)
	heads, err := j.Heads(ctx)
	require.NoError(t, err)
	assert.Equal(t, expectedHeads(t, j), heads, "built from the file")
	byID := map[string]Head{}
	for _, h := range heads {
		byID[h.ID] = h
	}
	assert.True(t, byID[ids["epic"]].HasChildren)
	assert.True(t, byID[ids["child"]].Ready && byID[ids["child"]].HasVerify)
	assert.False(t, byID[ids["waits"]].Ready, "an open blocker holds it back")
	assert.False(t, byID[ids["done"]].Ready)
	require.FileExists(t, j.indexPath)

	again, err := j.Heads(ctx)
	require.NoError(t, err)
	assert.Equal(t, heads, again, "read from the index")

	// Our own write, then an edit in place of the same size by hand: both seen.
	require.NoError(t, j.SetStatus(ctx, ids["blocker"], StatusClosed, "done"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte(`"title":"Child"`), []byte(`"title":"Chyld"`), 1), 0o644))
	heads, err = j.Heads(ctx)
	require.NoError(t, err)
	assert.Equal(t, expectedHeads(t, j), heads)
	for _, h := range heads {
		byID[h.ID] = h
	}
	assert.Equal(t, "Chyld", byID[ids["child"]].Title)
	assert.True(t, byID[ids["waits"]].Ready, "its blocker closed: ready now, though its own line did not change")

	// A broken index is made again.
	require.NoError(t, os.WriteFile(j.indexPath, []byte("git-norma backlog heads\n\x02garbage"), 0o644))
	heads, err = j.Heads(ctx)
	require.NoError(t, err)
	assert.Equal(t, expectedHeads(t, j), heads)

	// A malformed line is reported, whatever the index held.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"_type":"issue","id":` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = j.Heads(ctx)
	assert.ErrorContains(t, err, "malformed task record")
}

// TestHeadsIndexCodec: every field of a head survives the index, and any truncation of the
// index is refused rather than read as fewer heads.
func TestHeadsIndexCodec(t *testing.T) {
	j, _, _ := headsFixture(t)
	heads, err := j.Heads(context.Background())
	require.NoError(t, err)
	data, err := os.ReadFile(j.indexPath)
	require.NoError(t, err)
	_, decoded, err := decodeIndex(data)
	require.NoError(t, err)
	assert.Equal(t, heads, decoded)
	for cut := len(headIndexMagic); cut < len(data); cut += 7 {
		_, _, err := decodeIndex(data[:cut])
		assert.Error(t, err, "cut at %d of %d", cut, len(data))
	}
}
