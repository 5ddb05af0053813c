package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexRepo is a repository with files committed, and a guard on its main checkout.
func indexRepo(t testing.TB, files map[string]string) (string, *Guard, func(args ...string)) {
	t.Helper()
	dir, run := gitRepo(t)
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	run("add", "-A")
	run("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "initial")
	return dir, &Guard{Places: placesOf(dir), Now: time.Now}, run
}

// The guard compares each tracked file's lstat after the step with its lstat before: a file
// written during the step is reported, one the user was editing before is not, and neither is
// git refreshing the index's stat data (git status) — only a staged change is.
func TestCheckIndexReportsFilesWrittenDuringTheStep(t *testing.T) {
	ctx := context.Background()
	dir, g, run := indexRepo(t, map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", "mine.txt": "mine\n", ".beads/issues.jsonl": "{}\n", ".norma/config.json": "{}\n",
	})
	appendTo := func(name, text string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(text)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	appendTo("mine.txt", "the user's edit in progress\n")

	before, err := g.snapshotIndex(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "b.txt", "dir/c.txt", "mine.txt"}, before.paths, "the backlog and .norma/ have guards of their own")
	assert.Empty(t, g.checkIndex(ctx, before))

	run("status", "--porcelain") // rewrites the index's stat data, not what it lists
	appendTo(".beads/issues.jsonl", "{}\n")
	assert.Empty(t, g.checkIndex(ctx, before))

	appendTo("dir/c.txt", "the agent was here\n")
	future := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "b.txt"), future, future)) // same size, new time
	assert.Equal(t, []string{
		"b.txt (not restored: the main checkout's files are the user's; see git diff)",
		"dir/c.txt (not restored: the main checkout's files are the user's; see git diff)",
	}, g.checkIndex(ctx, before))

	run("add", "a.txt", "mine.txt")
	assert.Contains(t, g.checkIndex(ctx, before), ".git/index (not restored: the staging area is the user's; see git status)")

	old := before.files
	g.checkIndex(ctx, before)
	assert.Equal(t, old, before.files, "the snapshot is not changed by a check")
}

// A snapshot lists what the index tracks: an untracked file changes nothing, a staged one does.
func TestSnapshotIndexListsWhatTheIndexTracks(t *testing.T) {
	ctx := context.Background()
	dir, g, run := indexRepo(t, map[string]string{"a.txt": "a\n"})
	first, err := g.snapshotIndex(ctx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n\n"), 0o644))
	second, err := g.snapshotIndex(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.digest, second.digest)
	run("add", "new.txt")
	third, err := g.snapshotIndex(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first.digest, third.digest)
	assert.Equal(t, []string{"a.txt", "new.txt"}, third.paths)
}

// BenchmarkGuardIndex is the guard's cost on the main checkout of a repository of 20,000
// tracked files: one snapshot and one check, as around every agent step.
func BenchmarkGuardIndex(b *testing.B) {
	files := map[string]string{}
	for i := range 20000 {
		files[fmt.Sprintf("d%03d/f%05d.txt", i%200, i)] = "x\n"
	}
	ctx := context.Background()
	_, g, _ := indexRepo(b, files)
	b.ResetTimer()
	for range b.N {
		s, err := g.snapshotIndex(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if found := g.checkIndex(ctx, s); len(found) > 0 {
			b.Fatal(found)
		}
	}
}
