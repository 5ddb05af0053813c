package notes

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func entry(ts time.Time, step int, summary string) Entry {
	return Entry{TS: Stamp(ts), Kind: KindStep, Task: "norma-a1", Run: "r-1", Step: step, Role: "do", Status: "ok", Summary: summary}
}

func TestAddIsReadableByStockGitAndIdempotent(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	head := repo.Must("rev-parse", "HEAD")
	j := Journal{Git: repo.Git}
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)

	require.NoError(t, j.Add(ctx, head, entry(t0.Add(time.Second), 2, "second"), entry(t0, 1, "first")))
	require.NoError(t, j.Add(ctx, head, entry(t0, 1, "first"))) // replayed mirror: no change

	out := repo.Must("notes", "--ref=norma", "show", head)
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], `{"ts":"2026-11-22T07:00:00.000Z","kind":"step"`), lines[0])
	assert.Contains(t, lines[1], `"summary":"second"`)
	assert.Contains(t, repo.Must("log", "-1", "--notes=norma"), "Notes (norma):")

	got, err := j.Read(ctx, head)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "first", got[0].Summary)
	repo.Must("fsck", "--no-progress")
}

func TestAddKeepsForeignLines(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	head := repo.Must("rev-parse", "HEAD")
	repo.Must("notes", "--ref=norma", "add", "-m", "a human wrote this", head)

	require.NoError(t, Journal{Git: repo.Git}.Add(ctx, head, entry(time.Now(), 1, "x")))
	out := repo.Must("notes", "--ref=norma", "show", head)
	assert.Contains(t, out, "a human wrote this")
	assert.Contains(t, out, `"summary":"x"`)
	got, err := Journal{Git: repo.Git}.Read(ctx, head)
	require.NoError(t, err)
	assert.Len(t, got, 1, "the human line is kept but is not an entry")
}

func TestReadWithoutNote(t *testing.T) {
	repo := gittest.NewRepo(t)
	got, err := Journal{Git: repo.Git}.Read(context.Background(), repo.Must("rev-parse", "HEAD"))
	require.NoError(t, err)
	assert.Empty(t, got)
}

// Two clones add entries to the note on the same commit; merging through a tracking ref with
// the configured cat_sort_uniq strategy keeps every entry of both, with no conflict.
func TestTwoClonesMergeWithoutLoss(t *testing.T) {
	ctx := context.Background()
	origin := gittest.NewRepo(t)
	head := origin.Must("rev-parse", "HEAD")
	a, b := cloneOf(t, origin), cloneOf(t, origin)
	for _, c := range []*gittest.Repo{a, b} {
		require.NoError(t, Configure(ctx, c.Git))
	}
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	shared := entry(t0, 1, "both saw this")
	require.NoError(t, Journal{Git: a.Git}.Add(ctx, head, shared, entry(t0.Add(time.Minute), 2, "from a")))
	require.NoError(t, Journal{Git: b.Git}.Add(ctx, head, shared, entry(t0.Add(2*time.Minute), 3, "from b")))

	a.Must("fetch", "-q", b.Dir, "+"+Ref+":refs/notes/remotes/b/norma")
	a.Must("notes", "--ref", Ref, "merge", "refs/notes/remotes/b/norma")

	got, err := Journal{Git: a.Git}.Read(ctx, head)
	require.NoError(t, err)
	var summaries []string
	for _, e := range got {
		summaries = append(summaries, e.Summary)
	}
	assert.Equal(t, []string{"both saw this", "from a", "from b"}, summaries)
	a.Must("fsck", "--no-progress")
}

func TestConfigureIsIdempotent(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	for range 2 {
		require.NoError(t, Configure(ctx, repo.Git))
	}
	assert.Equal(t, "cat_sort_uniq", repo.Must("config", "notes.norma.mergeStrategy"))
	assert.Equal(t, RewriteRef, repo.Must("config", "--get-all", "notes.rewriteRef"))
}

// An exact refs/notes/norma in notes.rewriteRef (an older git-norma's, or set by hand) is
// replaced by the glob; the user's own rewrite refs stay, in order.
func TestConfigureReplacesTheExactRef(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	for _, v := range []string{"refs/notes/commits", Ref, "refs/notes/review", Ref} {
		repo.Must("config", "--add", "notes.rewriteRef", v)
	}
	require.NoError(t, Configure(ctx, repo.Git))
	assert.Equal(t, "refs/notes/commits\nrefs/notes/review\n"+RewriteRef, repo.Must("config", "--get-all", "notes.rewriteRef"))
	assert.True(t, CopiedOnRewrite([]string{Ref}))
	assert.True(t, CopiedOnRewrite([]string{"refs/notes/commits", RewriteRef}))
	assert.False(t, CopiedOnRewrite([]string{"refs/notes/commits", "refs/notes/norma2"}))
}

// With the configured notes.rewriteRef, amend and rebase say nothing while the journal does
// not exist yet (an exact rewriteRef made git warn "notes ref refs/notes/norma is invalid"),
// and carry the notes to the rewritten commits once it does.
func TestRewriteCarriesNotesWithoutWarning(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	require.NoError(t, Configure(ctx, repo.Git))
	repo.WriteFile("a.txt", "a\n")
	repo.Commit("add a")
	assert.Empty(t, repo.Stderr("commit", "-q", "--amend", "-m", "add a, amended"))
	assert.Empty(t, repo.Stderr("rebase", "-q", "--force-rebase", "HEAD~1"))
	require.Error(t, repo.Git.Run(ctx, "rev-parse", "--verify", "-q", Ref), "no journal yet")

	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	e := entry(t0, 1, "on the commit")
	require.NoError(t, Journal{Git: repo.Git}.Add(ctx, repo.Must("rev-parse", "HEAD"), e))
	assert.Empty(t, repo.Stderr("commit", "-q", "--amend", "-m", "add a, amended again"))
	got, err := Journal{Git: repo.Git}.Read(ctx, repo.Must("rev-parse", "HEAD"))
	require.NoError(t, err)
	assert.Equal(t, []Entry{e}, got, "the note followed the amend")

	assert.Empty(t, repo.Stderr("rebase", "-q", "--force-rebase", "HEAD~1"))
	got, err = Journal{Git: repo.Git}.Read(ctx, repo.Must("rev-parse", "HEAD"))
	require.NoError(t, err)
	assert.Equal(t, []Entry{e}, got, "the note followed the rebase")
}

func cloneOf(t *testing.T, origin *gittest.Repo) *gittest.Repo {
	t.Helper()
	dir := t.TempDir()
	_, err := git.Runner{}.Output(context.Background(), "clone", "-q", origin.Dir, dir)
	require.NoError(t, err, fmt.Sprintf("clone %s", origin.Dir))
	c := gittest.Open(t, dir)
	c.Must("config", "user.name", "Clone")
	c.Must("config", "user.email", "clone@example.com")
	return c
}

// Two clones each add entries and push through a shared bare remote: the second push is
// rejected, merged and retried, and afterwards both clones hold every entry. Nothing is forced.
func TestPushPullThroughRemote(t *testing.T) {
	ctx := context.Background()
	origin := gittest.NewRepo(t)
	head := origin.Must("rev-parse", "HEAD")
	bare := t.TempDir()
	_, err := git.Runner{}.Output(ctx, "clone", "-q", "--bare", origin.Dir, bare)
	require.NoError(t, err)
	a, b := cloneOf(t, gittest.Open(t, bare)), cloneOf(t, gittest.Open(t, bare))
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)

	pulled, err := Journal{Git: a.Git}.Pull(ctx, "origin")
	require.NoError(t, err)
	assert.False(t, pulled, "the remote has no journal yet")

	require.NoError(t, Journal{Git: a.Git}.Add(ctx, head, entry(t0, 1, "from a")))
	require.NoError(t, Journal{Git: a.Git}.Push(ctx, "origin"))
	require.NoError(t, Journal{Git: b.Git}.Add(ctx, head, entry(t0.Add(time.Minute), 2, "from b")))
	require.NoError(t, Journal{Git: b.Git}.Push(ctx, "origin"), "rejected first, then merged and pushed")

	pulled, err = Journal{Git: a.Git}.Pull(ctx, "origin")
	require.NoError(t, err)
	assert.True(t, pulled)
	for _, c := range []*gittest.Repo{a, b} {
		got, err := Journal{Git: c.Git}.Read(ctx, head)
		require.NoError(t, err)
		require.Len(t, got, 2, c.Dir)
		assert.Equal(t, "from a", got[0].Summary)
		assert.Equal(t, "from b", got[1].Summary)
	}
	remote := gittest.Open(t, bare)
	assert.Equal(t, 2, strings.Count(remote.Must("notes", "--ref", Ref, "show", head), "\n")+1)
}

func TestSyncRefusesBadRemotes(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Must("notes", "--ref", Ref, "add", "-m", "x", "HEAD")
	j := Journal{Git: repo.Git}
	tests := []struct {
		remote string
		kind   error
	}{
		{"", ErrInvalidRemote},
		{"--upload-pack=touch /tmp/x", ErrInvalidRemote},
		{"a..b", ErrInvalidRemote},
		{"/nonexistent/path", ErrInvalidRemote},
		{"nope", ErrNoRemote},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			_, err := j.Pull(context.Background(), tt.remote)
			assert.ErrorIs(t, err, tt.kind)
			err = j.Push(context.Background(), tt.remote)
			assert.ErrorIs(t, err, tt.kind)
			assert.NotErrorIs(t, err, ErrRejected)
		})
	}
}

// Each way a sync fails is told apart, so the user gets the way out that fits: a remote git
// cannot reach is not a rejected push.
func TestSyncFailureKinds(t *testing.T) {
	ctx := context.Background()
	origin := gittest.NewRepo(t)
	head := origin.Must("rev-parse", "HEAD")
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)

	t.Run("unreachable", func(t *testing.T) {
		repo := gittest.NewRepo(t)
		repo.Must("remote", "add", "gone", filepath.Join(t.TempDir(), "nonexistent"))
		repo.Must("notes", "--ref", Ref, "add", "-m", "x", "HEAD")
		j := Journal{Git: repo.Git}
		err := j.Push(ctx, "gone")
		assert.ErrorIs(t, err, ErrUnreachable)
		assert.NotErrorIs(t, err, ErrRejected)
		assert.Contains(t, err.Error(), `cannot reach remote "gone": `)
		assert.Contains(t, err.Error(), "does not appear to be a git repository")
		_, err = j.Pull(ctx, "gone")
		assert.ErrorIs(t, err, ErrUnreachable)
	})

	t.Run("no local journal", func(t *testing.T) {
		a := cloneOf(t, origin)
		assert.ErrorIs(t, Journal{Git: a.Git}.Push(ctx, "origin"), ErrNoJournal)
	})

	// The push goes to a remote the pull does not read from (remote.<name>.pushurl), so the
	// push is rejected again after the merge, as when another clone pushes in between.
	t.Run("rejected after merging", func(t *testing.T) {
		fetched, pushed := t.TempDir(), t.TempDir()
		for _, dir := range []string{fetched, pushed} {
			_, err := git.Runner{}.Output(ctx, "clone", "-q", "--bare", origin.Dir, dir)
			require.NoError(t, err)
		}
		other := cloneOf(t, gittest.Open(t, pushed))
		require.NoError(t, Journal{Git: other.Git}.Add(ctx, head, entry(t0, 1, "from other")))
		require.NoError(t, Journal{Git: other.Git}.Push(ctx, "origin"))

		a := cloneOf(t, gittest.Open(t, fetched))
		a.Must("remote", "set-url", "--push", "origin", pushed)
		require.NoError(t, Journal{Git: a.Git}.Add(ctx, head, entry(t0.Add(time.Minute), 2, "from a")))
		err := Journal{Git: a.Git}.Push(ctx, "origin")
		assert.ErrorIs(t, err, ErrRejected)
		assert.NotErrorIs(t, err, ErrUnreachable)
	})
}

func TestAddMergesItsOwnNotesAndKeepsLinesAddedMeanwhile(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	base := repo.Must("rev-parse", "HEAD")
	repo.Must("notes", "--ref=norma", "add", "-m", "landed earlier", base)
	repo.Must("commit", "-q", "--allow-empty", "-m", "step")
	step := repo.Must("rev-parse", "HEAD")
	j := Journal{Git: repo.Git}
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)

	// A note it created is merged: sorted and de-duplicated like any other.
	require.NoError(t, j.Add(ctx, step, entry(t0.Add(2*time.Second), 3, "check")))
	require.NoError(t, j.Add(ctx, step, entry(t0, 2, "do"), entry(t0.Add(2*time.Second), 3, "check")))
	require.NoError(t, j.Add(ctx, step, entry(t0.Add(3*time.Second), 4, "act")))
	got, err := j.Read(ctx, step)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"do", "check", "act"}, []string{got[0].Summary, got[1].Summary, got[2].Summary})

	// A line someone adds meanwhile is kept.
	require.NoError(t, j.Add(ctx, base, entry(t0, 1, "plan")))
	repo.Must("notes", "--ref=norma", "append", "-m", "a check meanwhile", base)
	require.NoError(t, j.Add(ctx, base, entry(t0.Add(time.Second), 1, "plan again")))
	out := repo.Must("notes", "--ref=norma", "show", base)
	for _, want := range []string{"landed earlier", "a check meanwhile", `"summary":"plan"`, `"summary":"plan again"`} {
		assert.Contains(t, out, want)
	}
}

// Two runs forked from the same commit both note it: neither may drop the other's lines.
func TestTwoJournalsKeepEachOthersLines(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	fork := repo.Must("rev-parse", "HEAD")
	a := Journal{Git: repo.Git}
	b := Journal{Git: repo.Git}
	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	require.NoError(t, a.Add(ctx, fork, entry(t0, 1, "a plans")))
	require.NoError(t, b.Add(ctx, fork, entry(t0.Add(time.Second), 1, "b plans")))
	require.NoError(t, a.Add(ctx, fork, entry(t0.Add(2*time.Second), 5, "a plans again")))
	got, err := a.Read(ctx, fork)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, "b plans", got[1].Summary)
}
