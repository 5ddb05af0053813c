package gitnorma

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// A task's earlier landing is the commit whose Norma-Task trailer names exactly it, with the
// run and the PASS a landing carries, made since the task was created: not a task whose id it
// merely starts, not a mention in the text, not a person's commit that refers to the task in a
// trailer of its own, not a landing from before the task existed (a reused id).
func TestLandedBeforeReadsExactTrailersSinceCreation(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	st := openStore(t, a)

	commitAt := func(when time.Time, msg string) string {
		t.Setenv("GIT_COMMITTER_DATE", when.Format(time.RFC3339))
		return repo.Commit(msg)
	}
	created := time.Now().Add(-24 * time.Hour)
	commitAt(created.Add(-48*time.Hour), "feat: old\n\nNorma-Task: norma-a1\nNorma-Run: r-old\n")
	commitAt(created.Add(time.Hour), "feat: child\n\nNorma-Task: norma-a1.1\nNorma-Run: r-child\nNorma-Verdict: PASS\n")
	commitAt(created.Add(2*time.Hour), "docs: mentions Norma-Task: norma-a1 in its text\n")
	commitAt(created.Add(2*time.Hour), "fix: a teammate's fix\n\nNorma-Task: norma-a1\n")
	commitAt(created.Add(2*time.Hour), "fix: another\n\nNorma-Task: norma-a1\nNorma-Run: r-new\n")
	task := tracker.Task{ID: "norma-a1", CreatedAt: created}

	p, err := a.lander().landedBefore(ctx, st, task, "main")
	require.NoError(t, err)
	assert.Empty(t, p.Commit, "only the child's trailer, a mention, references, and a landing older than the task")

	landed := commitAt(created.Add(3*time.Hour), "feat: a1\n\nNorma-Task: norma-a1\nNorma-Run: r-new\nNorma-Verdict: PASS\n")
	commitAt(created.Add(4*time.Hour), "chore: later\n")
	p, err = a.lander().landedBefore(ctx, st, task, "main")
	require.NoError(t, err)
	assert.Equal(t, priorLanding{Commit: landed, RunID: "r-new"}, p)

	p, err = a.lander().landedBefore(ctx, st, tracker.Task{ID: "norma-a1.1", CreatedAt: created}, "main")
	require.NoError(t, err)
	assert.Equal(t, "r-child", p.RunID)
}

// The store's record of a task's landing is found however many runs of the task came after it
// (each git norma check of the task is one).
func TestStoreLandingPastManyLaterRuns(t *testing.T) {
	ctx := context.Background()
	a, repo := initApp(t)
	st := openStore(t, a)
	landed := repo.Must("rev-parse", "HEAD")
	task := tracker.Task{ID: "norma-a1", CreatedAt: time.Now().Add(-time.Hour)}
	start := time.Now().Add(-30 * time.Minute)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-landed", CreatedAt: start, Goal: "g", RunDir: "d", TaskID: task.ID, Status: store.StatusPassed}, nil))
	require.NoError(t, st.SetLanded(ctx, "r-landed", landed))
	for i := range 60 {
		require.NoError(t, st.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r-check-%02d", i), Kind: store.KindCheck, CreatedAt: start.Add(time.Duration(i+1) * time.Second),
			Goal: "g", RunDir: "d", TaskID: task.ID, Status: store.StatusPassed}, nil))
	}
	p, err := a.Repo.storeLanding(ctx, st, task, "main")
	require.NoError(t, err)
	assert.Equal(t, priorLanding{Commit: landed, RunID: "r-landed"}, p)
}
