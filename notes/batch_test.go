package notes

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// TestAddAllIsOneNotesCommit: the notes of several commits are written in one commit of the
// notes ref, merged with what was there (a person's line, an earlier entry), readable by stock
// git; writing them again changes nothing that matters.
func TestAddAllIsOneNotesCommit(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	first := repo.Must("rev-parse", "HEAD")
	second := repo.Commit("second")
	third := repo.Commit("third")
	repo.Must("notes", "--ref=norma", "add", "-m", "a human wrote this", first)
	t0 := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	j := Journal{Git: repo.Git}
	before := repo.Must("rev-list", "--count", Ref)

	require.NoError(t, j.AddAll(ctx, []Note{
		{Commit: first, Entries: []Entry{entry(t0, 1, "on first")}},
		{Commit: second, Entries: []Entry{entry(t0.Add(time.Second), 2, "on second")}},
		{Commit: third, Entries: []Entry{entry(t0.Add(2*time.Second), 3, "on third")}},
		{Commit: second, Entries: []Entry{entry(t0.Add(3*time.Second), 4, "on second again")}},
		{Commit: third},
	}))
	assert.Equal(t, "2", repo.Must("rev-list", "--count", Ref), "one notes commit for three notes (after %s)", before)
	out := repo.Must("notes", "--ref=norma", "show", first)
	assert.Contains(t, out, "a human wrote this")
	assert.Contains(t, out, `"summary":"on first"`)
	got, err := j.Read(ctx, second)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"on second", "on second again"}, []string{got[0].Summary, got[1].Summary})
	assert.Contains(t, repo.Must("notes", "--ref=norma", "show", third), `"summary":"on third"`)
	repo.Must("fsck", "--no-progress")

	// The journal read back by its own reader, and a replay that adds nothing.
	require.NoError(t, j.AddAll(ctx, []Note{{Commit: first, Entries: []Entry{entry(t0, 1, "on first")}}}))
	assert.Equal(t, 2, strings.Count(repo.Must("notes", "--ref=norma", "show", first), "\n")+1)
}
