package tracker

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An editor's save (or a git pull) takes no lock: one that replaces the backlog between an
// update's read and its write is not written over. The update is made again on that version,
// and both changes are there.
func TestUpdateKeepsAnOutsideEditMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	id := mustCreate(t, j, NewTask{Title: "Ours"}).ID
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	theirs := bytes.ReplaceAll(bytes.TrimSpace(data), []byte(id), []byte("norma-edit"))
	attempts := 0
	err = j.updateTask(ctx, id, func(rec *record, _ time.Time) error {
		if attempts++; attempts == 1 {
			// saved by an editor, which writes a new file and renames it over the old one
			require.NoError(t, os.WriteFile(path+".editor", append(append(data, theirs...), '\n'), 0o644))
			require.NoError(t, os.Rename(path+".editor", path))
		}
		rec.wire.Title = "Ours, renamed"
		rec.dirty = true
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, attempts, "made again on the edited file")
	got, err := j.Get(ctx, "norma-edit")
	require.NoError(t, err, "the editor's task is kept")
	assert.Equal(t, "Ours", got.Title)
	got, err = j.Get(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "Ours, renamed", got.Title)
}

// A second name made for the backlog meanwhile (the fallback guard's, before a step) changes its
// ctime alone: no reason to make the update again.
func TestUpdateIgnoresANewLinkToTheBacklog(t *testing.T) {
	ctx := context.Background()
	j, path := newTestJSONL(t)
	id := mustCreate(t, j, NewTask{Title: "Ours"}).ID
	attempts := 0
	err := j.updateTask(ctx, id, func(rec *record, _ time.Time) error {
		if attempts++; attempts == 1 {
			require.NoError(t, os.Link(path, path+".guard"))
		}
		rec.wire.Title = "renamed"
		rec.dirty = true
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, attempts)
}
