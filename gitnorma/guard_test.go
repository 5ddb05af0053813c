package gitnorma

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// guardFixture is an initialised repository whose path has a space in it, the tracker as
// git-norma uses it, and a run's workspace guard.
func guardFixture(t *testing.T, initArgs ...string) (tracker.Tracker, workspace) {
	t.Helper()
	gittest.Isolate(t)
	dir := filepath.Join(t.TempDir(), "My Drive", "repo")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, args := range [][]string{append([]string{"init", "-q", "-b", "main"}, initArgs...), {"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	ctx := context.Background()
	_, err := Init(ctx, dir, InitOptions{})
	require.NoError(t, err)
	app, err := Open(ctx, dir)
	require.NoError(t, err)
	tr, err := app.Tracker()
	require.NoError(t, err)
	runDir := app.Repo.Path("runs", "r-1")
	require.NoError(t, os.MkdirAll(filepath.Join(runDir, "workspace"), 0o700))
	_, err = tr.Create(ctx, tracker.NewTask{Title: "first"})
	require.NoError(t, err)
	return tr, workspace{root: app.Repo.Root, runDir: runDir}
}

// guardApp is guardFixture's repository opened as git-norma opens it, for the guard's tests:
// the context, the App, its store, and git run there (its output trimmed).
func guardApp(t *testing.T, initArgs ...string) (context.Context, *App, *store.Store, func(args ...string) string) {
	t.Helper()
	ctx := context.Background()
	_, ws := guardFixture(t, initArgs...)
	app, err := Open(ctx, ws.root)
	require.NoError(t, err)
	st, err := app.Repo.OpenStore(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	git := func(args ...string) string {
		t.Helper()
		out, err := app.Repo.Git.Output(ctx, args...)
		require.NoError(t, err, "git %v", args)
		return strings.TrimSpace(out)
	}
	return ctx, app, st, git
}

// taskGuard is the fallback guard of run runID (with its store st, if any) of task, landing on
// main.
func taskGuard(app *App, st *store.Store, runID, task string) *guard.Guard {
	return &guard.Guard{Places: app.Repo.guarded(), Now: app.Now, Store: st, RunID: runID, TaskID: task, Target: "main", LiveTasks: app.Repo.liveTasks}
}

func TestGuardIgnoresGitNormasOwnBacklogWrites(t *testing.T) {
	ctx := context.Background()
	tr, ws := guardFixture(t)
	snap := loopSnapshot(ws.fingerprint())
	_, err := tr.Create(ctx, tracker.NewTask{Title: "added by another run, or a person, meanwhile"})
	require.NoError(t, err)
	changed, err := ws.OutsideChanges(ctx, snap)
	require.NoError(t, err)
	assert.Empty(t, changed)
}

func TestGuardCatchesAnAgentsBacklogEdit(t *testing.T) {
	ctx := context.Background()
	tr, ws := guardFixture(t)
	jsonl := filepath.Join(ws.root, ".beads", "issues.jsonl")
	sneak := func(id string) {
		f, err := os.OpenFile(jsonl, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"_type":"issue","id":"` + id + `","title":"sneaked in","status":"open","priority":2,"issue_type":"task","created_at":"2026-11-01T10:00:00Z","updated_at":"2026-11-01T10:00:00Z"}` + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}

	t.Run("left as it is", func(t *testing.T) {
		snap := ws.fingerprint()
		sneak("norma-zz")
		changed, err := ws.OutsideChanges(ctx, loopSnapshot(snap))
		require.NoError(t, err)
		assert.Equal(t, []string{".beads/issues.jsonl (not restored)"}, changed)
	})
	t.Run("then rewritten by git-norma's next write", func(t *testing.T) {
		_, err := tr.Create(ctx, tracker.NewTask{Title: "a clean start"})
		require.NoError(t, err)
		snap := ws.fingerprint()
		sneak("norma-zy")
		_, err = tr.Create(ctx, tracker.NewTask{Title: "another run's write, which keeps the sneaked line"})
		require.NoError(t, err)
		changed, err := ws.OutsideChanges(ctx, loopSnapshot(snap))
		require.NoError(t, err)
		assert.Equal(t, []string{".beads (not restored)"}, changed)
	})
}

// loopSnapshot is a step's snapshot of the places outside the workspace.
func loopSnapshot(outside string) loop.Snapshot { return loop.Snapshot{Outside: outside} }

// The guard's view of the store: a run of the task that appeared during the step (an agent's
// forged PASS, which git norma land would take) is removed; a change to the run's own records
// is reported, and so is a run of the task deleted (its fork point refused a landing built on
// commits the target lost); other tasks' runs (a parallel loop's) and events (mirrors) are not
// its concern, but their pending violations are: one cleared is put back.
func TestGuardCatchesForgedRecordsOfItsTask(t *testing.T) {
	ctx, app, st, _ := guardApp(t)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: ".norma/runs/r-1", TaskID: "norma-t"}, nil))
	g := taskGuard(app, st, "r-1", "norma-t")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-other", Goal: "another task's", RunDir: "x", TaskID: "norma-o"}, nil))
	require.NoError(t, st.AppendEvent(ctx, "r-1", store.Event{Type: "mirror_failed", Message: "meanwhile"}))
	assert.Empty(t, g.Check(ctx, snap))

	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-forged", Goal: "g", Status: store.StatusPassed, RunDir: "x", TaskID: "norma-t"}, nil))
	assert.Equal(t, []string{".norma/norma.db: runs r-forged of task norma-t (removed)"}, g.Check(ctx, snap))
	_, err = st.Run(ctx, "r-forged")
	assert.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-old", Goal: "g", Status: store.StatusFailed, RunDir: "x", TaskID: "norma-t"}, nil))
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.DeleteRun(ctx, "r-old"))
	assert.Equal(t, []string{".norma/norma.db: runs r-old of task norma-t deleted (not restored)"}, g.Check(ctx, snap),
		"an old run of the task deleted, its fork point with it")

	require.NoError(t, st.RecordViolation(ctx, store.Violation{RunID: "r-other", TaskID: "norma-o", Paths: []string{"hooks/pre-push (restored)"}, At: time.Now()}))
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.ClearViolation(ctx, "r-other", time.Now()))
	assert.Equal(t, []string{".norma/norma.db: the pending guard violation of run r-other (restored)"}, g.Check(ctx, snap),
		"another task's violation cleared by the agent")
	pending, err := st.PendingViolations(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, []string{"hooks/pre-push (restored)"}, pending[0].Paths)
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.RemoveRuns(ctx, []string{"r-other"}))
	assert.Equal(t, []string{".norma/norma.db: the pending guard violation of run r-other (deleted with its run; not restored, this violation stands for it)"},
		g.Check(ctx, snap), "deleted with its run")

	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.RecordPass(ctx, "r-1", strings.Repeat("a", 40), strings.Repeat("b", 40)))
	assert.Equal(t, []string{".norma/norma.db: records of runs r-1 (not restored)"}, g.Check(ctx, snap))
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, st.SetKV(ctx, "r-1", "branch", "forged"))
	assert.Equal(t, []string{".norma/norma.db: records of runs r-1 (not restored)"}, g.Check(ctx, snap), "the extras count too")
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	_, err = agentDB(t, app).ExecContext(ctx, `UPDATE runs SET redo = 1 WHERE run_id = 'r-1'`)
	require.NoError(t, err)
	assert.Equal(t, []string{".norma/norma.db: records of runs r-1 (not restored)"}, g.Check(ctx, snap), "a forged --force, which lands over an earlier landing")

	// a step's output, which landing reads its criteria from
	require.NoError(t, st.CommitStep(ctx, store.StepCommit{Step: store.Step{RunID: "r-1", Index: 1, Role: "plan", Iteration: 1,
		Status: "ok", Dir: "d", StartedAt: time.Now(), Output: `{"plan":{"criteria":"test -f x"}}`}, Iteration: 1, CurrentStepIndex: 1}))
	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	_, err = agentDB(t, app).ExecContext(ctx, `UPDATE steps SET output_json = '{"plan":{"criteria":"true"}}' WHERE run_id = 'r-1'`)
	require.NoError(t, err)
	assert.Equal(t, []string{".norma/norma.db: records of runs r-1 (not restored)"}, g.Check(ctx, snap), "a step's output counts too")
}

// Refs: the target and another task's branch moved during the step are moved back
// (compare-and-swap); a branch of a task a live run holds the lock of, and the run's own
// branch, are not the agent's to answer for. No landing moves the target meanwhile (the guard
// holds the landing lock from its snapshot to its check), so a landing record does not excuse
// a moved target: the agent can write one.
func TestGuardMovesBackRefsTheAgentMoved(t *testing.T) {
	ctx, app, st, git := guardApp(t)
	main := git("rev-parse", "main")
	other := git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-p", main, "-m", "unverified", main+"^{tree}")
	for _, b := range []string{"norma/task/norma-own", "norma/task/norma-idle", "norma/task/norma-busy", "norma/task/norma-recent"} {
		git("branch", b, main)
	}
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: "x", TaskID: "norma-own"}, nil))
	g := taskGuard(app, st, "r-1", "norma-own")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	lock, err := app.Repo.acquireTaskLock("norma-busy") // a run of that task, live
	require.NoError(t, err)
	defer lock.Release()
	require.NoError(t, lock.Record("r-busy", time.Now()))
	// a run record of that task made during the step is no sign of one: the agent can write it
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-recent", Goal: "g", RunDir: "x", TaskID: "norma-recent"}, nil))
	for _, b := range []string{"main", "norma/task/norma-own", "norma/task/norma-idle", "norma/task/norma-busy", "norma/task/norma-recent"} {
		git("update-ref", "refs/heads/"+b, other)
	}
	git("update-ref", "refs/heads/norma/task/norma-new", other)
	assert.Equal(t, []string{
		"refs/heads/main (moved back from " + other[:10] + ")", "refs/heads/norma/task/norma-idle (moved back from " + other[:10] + ")",
		"refs/heads/norma/task/norma-new (removed; it was at " + other[:10] + ")", "refs/heads/norma/task/norma-recent (moved back from " + other[:10] + ")",
	}, g.Check(ctx, snap))
	assert.Equal(t, main, git("rev-parse", "main"))
	assert.Equal(t, other, git("rev-parse", "norma/task/norma-busy"), "a live run of that task moved it")
	assert.Equal(t, other, git("rev-parse", "norma/task/norma-own"), "the workspace's own, checked at its commit")

	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	landing, err := flock.Acquire(ctx, app.Repo.Path("locks", "land.lock"), 0o600, flock.Exclusive|syscall.LOCK_NB)
	assert.Error(t, err, "the guard holds the landing lock while the agent works")
	if landing != nil {
		landing()
	}
	git("update-ref", "refs/heads/main", other)
	require.NoError(t, st.SetLanded(ctx, "r-recent", other))
	assert.Equal(t, []string{"refs/heads/main (moved back from " + other[:10] + ")"}, g.Check(ctx, snap), "a landing record the agent could have written")
	landing, err = flock.Acquire(ctx, app.Repo.Path("locks", "land.lock"), 0o600, flock.Exclusive|syscall.LOCK_NB)
	require.NoError(t, err, "released by the check")
	landing()
}

// The record that unconfined processes ran here is what keeps a forged PASS from landing
// unchecked (trust.go): an agent that removes or rewrites it during its step has it put back
// and reported. One made meanwhile (a parallel run's) is no change of the agent's.
func TestGuardRestoresTheUnshieldedRecord(t *testing.T) {
	ctx, app, st, _ := guardApp(t)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: "x", TaskID: "norma-t"}, nil))
	g := taskGuard(app, st, "r-1", "norma-t")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, markUnshielded(ctx, st, app.Now(), "a parallel run"))
	assert.Empty(t, g.Check(ctx, snap), "made meanwhile: not the agent's doing")

	mark, _, err := st.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	for name, tamper := range map[string]func() error{
		"removed": func() error { return st.Facts().ClearUnshielded(ctx) },
		"rewritten": func() error {
			return st.Facts().RestoreUnshielded(ctx, store.Unshielded{At: mark.At, What: "nothing to see"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			snap, err := g.Snapshot(ctx)
			require.NoError(t, err)
			require.NoError(t, tamper())
			assert.Equal(t, []string{".norma/norma.db: the record that unconfined processes ran here (restored)"}, g.Check(ctx, snap))
			got, ok, err := st.Facts().UnshieldedSince(ctx)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, mark.What, got.What)
		})
	}
}

// A remote-tracking ref is what the hooks' gate takes as published and lets through unjudged:
// one made or moved during the step to bring a task's work in (its head, one of its commits,
// a merge holding one; a symbolic ref leading there; under refs/remotes/norma/task/, which the
// gate counts) is set back. One a fetch moved is not: to the remote's own commits, or to task
// work the remote really has there (a task's branch merged on the server).
func TestGuardSetsBackRemoteRefsThatPublishTaskWork(t *testing.T) {
	ctx, app, _, git := guardApp(t)
	n := 0
	commit := func(parents ...string) string {
		n++
		args := []string{"-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-m", fmt.Sprint("commit ", n)}
		for _, p := range parents {
			args = append(args, "-p", p)
		}
		return git(append(args, "main^{tree}")...)
	}
	main := git("rev-parse", "main")
	step1 := commit(main)
	step2 := commit(step1)
	git("branch", "norma/task/norma-x", step2)
	fetched := commit(main)
	// the remote, where a teammate merged the task's branch
	bare := filepath.Join(t.TempDir(), "origin.git")
	git("init", "-q", "--bare", bare)
	git("remote", "add", "origin", bare)
	merged := commit(fetched, step2)
	git("push", "-q", bare, merged+":refs/heads/main")
	git("update-ref", "refs/remotes/origin/main", main)
	git("update-ref", "refs/remotes/origin/norma/task/norma-x", main)
	g := taskGuard(app, nil, "", "norma-own")
	move := func(ref, to string) func() { return func() { git("update-ref", ref, to) } }
	const published = ": it made task work look published)"

	for _, tt := range []struct {
		name string
		act  func()
		want string
	}{
		{"a new ref at a task's head", move("refs/remotes/origin/cache", step2), "refs/remotes/origin/cache (removed" + published},
		{"a new ref at one of its commits", move("refs/remotes/origin/cache", step1), "refs/remotes/origin/cache (removed" + published},
		{"a merge holding one", move("refs/remotes/origin/cache", commit(fetched, step1)), "refs/remotes/origin/cache (removed" + published},
		{"the target's remote moved onto it", move("refs/remotes/origin/main", step2), "refs/remotes/origin/main (moved back" + published},
		{"a symbolic ref leading to it", func() { git("symbolic-ref", "refs/remotes/origin/cache", "refs/heads/norma/task/norma-x") },
			"refs/remotes/origin/cache (removed" + published},
		{"a remote named norma", move("refs/remotes/norma/task/x", step2), "refs/remotes/norma/task/x (removed" + published},
		{"a fetch", move("refs/remotes/origin/main", fetched), ""},
		{"a fetch of task work merged on the server", func() { git("fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main") }, ""},
		{"a remote's task branch", move("refs/remotes/origin/norma/task/norma-x", step2), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := git("for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes/")
			snap, err := g.Snapshot(ctx)
			require.NoError(t, err)
			tt.act()
			found := g.Check(ctx, snap)
			if tt.want == "" {
				assert.Empty(t, found)
				git("update-ref", "--no-deref", "refs/remotes/origin/main", main) // as it was, for the next case
				return
			}
			assert.Equal(t, []string{tt.want}, found)
			assert.Equal(t, before, git("for-each-ref", "--format=%(refname) %(objectname)", "refs/remotes/"), "set back")
			assert.Equal(t, step2, git("rev-parse", "norma/task/norma-x"), "the task's branch is left alone")
		})
	}
}

// A replace ref made during the step would have your git read a commit of the target as one
// holding what no task made: it is removed and reported. git-norma's own git never reads them.
func TestGuardRemovesReplaceRefs(t *testing.T) {
	ctx, app, _, git := guardApp(t)
	main := git("rev-parse", "main")
	fake := git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-m", "fake", "main^{tree}")
	g := taskGuard(app, nil, "", "norma-own")
	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	subject := git("show", "-s", "--format=%s", "main")
	git("replace", main, fake)
	assert.Equal(t, subject, git("show", "-s", "--format=%s", "main"), "git-norma's own git reads the objects")
	assert.Equal(t, []string{"refs/replace/" + main + " (removed: it makes git read one commit as another)"}, g.Check(ctx, snap))
	assert.Empty(t, git("for-each-ref", "refs/replace/"))
}

// In a SHA-256 repository too, a ref the step removed is put back: "must not exist" is the zero
// id of the repository's own length, not SHA-1's.
func TestGuardRestoresRefsInASHA256Repository(t *testing.T) {
	ctx, app, _, git := guardApp(t, "--object-format=sha256")
	main := git("rev-parse", "main")
	require.Len(t, main, 64)
	fake := git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-m", "fake", "main^{tree}")
	git("replace", main, fake) // yours, made before the step
	g := taskGuard(app, nil, "", "norma-own")
	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	git("replace", "-d", main)
	assert.Equal(t, []string{"refs/replace/" + main + " (restored: it makes git read one commit as another)"}, g.Check(ctx, snap))
	assert.Equal(t, fake, git("rev-parse", "refs/replace/"+main))
}

// The store's schema is git-norma's: a trigger an agent made (which would forge records
// whenever git-norma writes its own, after the guard looked) is dropped, and a dropped table
// of the store's record that unconfined processes ran is made again with the record.
func TestGuardUndoesStoreSchemaChanges(t *testing.T) {
	ctx, app, st, _ := guardApp(t)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: "x", TaskID: "norma-t"}, nil))
	require.NoError(t, markUnshielded(ctx, st, app.Now(), "a run of norma-t"))
	g := taskGuard(app, st, "r-1", "norma-t")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	_, err = agentDB(t, app).ExecContext(ctx, `CREATE TRIGGER forge AFTER UPDATE ON runs BEGIN DELETE FROM store_facts; END`)
	require.NoError(t, err)
	assert.Equal(t, []string{".norma/norma.db: its schema changed (triggers forge dropped)"}, g.Check(ctx, snap))
	var n int
	require.NoError(t, agentDB(t, app).QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'trigger'`).Scan(&n))
	assert.Zero(t, n)

	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	_, err = agentDB(t, app).ExecContext(ctx, `DROP TABLE store_facts`)
	require.NoError(t, err)
	assert.Equal(t, []string{
		".norma/norma.db: its schema changed (not restored: look at it with sqlite3)",
		".norma/norma.db: the record that unconfined processes ran here (restored)",
	}, g.Check(ctx, snap))
	u, ok, err := st.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "a run of norma-t", u.What)
}

// A store replaced by another file during the step loses what the run writes to the one it
// opened; the new file is marked as written by unconfined processes, so that no PASS in it
// lands unchecked.
func TestGuardMarksAReplacedStore(t *testing.T) {
	ctx, app, st, _ := guardApp(t)
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: "x", TaskID: "norma-t"}, nil))
	g := taskGuard(app, st, "r-1", "norma-t")
	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)

	otherPath := filepath.Join(t.TempDir(), "other.db")
	other, err := store.Open(ctx, otherPath)
	require.NoError(t, err)
	other.Close()
	path := app.Repo.Path("norma.db")
	require.NoError(t, os.Rename(otherPath, path))
	found := g.Check(ctx, snap)
	require.Len(t, found, 1)
	assert.Contains(t, found[0], ".norma/norma.db (replaced by another file; marked as written by unconfined processes")
	now, err := store.Open(ctx, path)
	require.NoError(t, err)
	defer now.Close()
	_, ok, err := now.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
}

// A landing record of a task that was not at work during the step does not make a moved
// target a landing (an agent can write one); and another task's branch that an agent deleted
// is put back when it held a PASS not landed yet (its verified work), never when its work
// landed (retention prunes such branches).
func TestGuardJudgesLandingsAndDeletionsByTheirTasks(t *testing.T) {
	ctx, app, st, git := guardApp(t)
	main := git("rev-parse", "main")
	other := git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-p", main, "-m", "unverified", main+"^{tree}")
	for _, task := range []string{"norma-idle", "norma-pass", "norma-done"} {
		git("branch", "norma/task/"+task, other)
		require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-" + task, Goal: "g", RunDir: "x", TaskID: task, Status: store.StatusFailed}, nil))
	}
	require.NoError(t, st.RecordPass(ctx, "r-norma-pass", other, strings.Repeat("b", 40)))
	require.NoError(t, st.RecordPass(ctx, "r-norma-done", other, strings.Repeat("b", 40)))
	require.NoError(t, st.SetLanded(ctx, "r-norma-done", strings.Repeat("c", 40)))
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-1", Goal: "g", RunDir: "x", TaskID: "norma-own"}, nil))
	g := &guard.Guard{Places: app.Repo.guarded(), Now: func() time.Time { return time.Now().Add(time.Hour) }, Store: st,
		RunID: "r-1", TaskID: "norma-own", Target: "main", LiveTasks: app.Repo.liveTasks}

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	git("update-ref", "refs/heads/main", other)
	require.NoError(t, st.SetLanded(ctx, "r-norma-idle", other))
	// records made during the step say nothing: a fresh run of the PASS's task, one that landed
	require.NoError(t, st.CreateRun(ctx, store.Run{ID: "r-forged", Goal: "g", RunDir: "x", TaskID: "norma-pass"}, nil))
	require.NoError(t, st.SetLanded(ctx, "r-forged", strings.Repeat("e", 40)))
	for _, task := range []string{"norma-idle", "norma-pass", "norma-done"} {
		git("update-ref", "-d", "refs/heads/norma/task/"+task)
	}
	assert.Equal(t, []string{
		"refs/heads/main (moved back from " + other[:10] + ")",
		"refs/heads/norma/task/norma-pass (restored: it holds the task's PASS, not landed yet)",
	}, g.Check(ctx, snap))
	assert.Equal(t, main, git("rev-parse", "main"))
	assert.Equal(t, other, git("rev-parse", "norma/task/norma-pass"))
}

// A symbolic link under git's refs makes git read refs from elsewhere: under refs/remotes/ a
// task's branch would look published to the hooks (it is removed); a refs/heads that is one
// would move the target where the guard, reading the files, would not see it (it is reported).
func TestGuardCatchesLinksInTheRefs(t *testing.T) {
	ctx, app, _, git := guardApp(t)
	git("branch", "norma/task/norma-x", "main")
	g := taskGuard(app, nil, "", "norma-own")
	refs := filepath.Join(app.Repo.GitDir, "refs")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(refs, "remotes"), 0o755))
	require.NoError(t, os.Symlink("../heads/norma/task", filepath.Join(refs, "remotes", "cache")))
	assert.Equal(t, []string{".git/refs/remotes/cache (removed: a symbolic link made git read refs from elsewhere)"}, g.Check(ctx, snap))
	_, err = os.Lstat(filepath.Join(refs, "remotes", "cache"))
	assert.True(t, os.IsNotExist(err))

	snap, err = g.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, os.Rename(filepath.Join(refs, "heads"), filepath.Join(refs, ".h")))
	require.NoError(t, os.Symlink(".h", filepath.Join(refs, "heads")))
	main := git("rev-parse", "main")
	other := git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit-tree", "-p", main, "-m", "unverified", main+"^{tree}")
	require.NoError(t, os.WriteFile(filepath.Join(refs, ".h", "main"), []byte(other+"\n"), 0o644))
	assert.Equal(t, []string{
		".git/refs/heads (not removed: a symbolic link makes git read refs from elsewhere; look at it, then remove it yourself)",
		"refs/heads/main (moved back from " + other[:10] + ")",
	}, g.Check(ctx, snap))
	assert.Equal(t, main, git("rev-parse", "main"), "as git reads it, through the link")
}

// What git opens as a file of its own must stay one: a named pipe there would hang every git
// command, git-norma's first (HEAD and packed-refs are put back from their copies, others
// removed); and a commondir, which would make git take its refs, config and hooks from another
// directory, goes.
func TestGuardSetsRightGitsOwnFiles(t *testing.T) {
	ctx, app, _, git := guardApp(t)
	git("pack-refs", "--all")
	gd := app.Repo.GitDir
	packed, err := os.ReadFile(filepath.Join(gd, "packed-refs"))
	require.NoError(t, err)
	main := git("rev-parse", "main")
	g := taskGuard(app, nil, "", "norma-own")

	snap, err := g.Snapshot(ctx)
	require.NoError(t, err)
	for _, name := range []string{"packed-refs", "ORIG_HEAD"} {
		_ = os.Remove(filepath.Join(gd, name))
		require.NoError(t, syscall.Mkfifo(filepath.Join(gd, name), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(gd, "commondir"), []byte("x\n"), 0o644))
	done := make(chan []string, 1)
	go func() { done <- g.Check(ctx, snap) }()
	select {
	case found := <-done:
		assert.Equal(t, []string{
			".git/ORIG_HEAD (removed: it was no longer a file)",
			".git/commondir (restored)",
			".git/packed-refs (restored: it was no longer a file)",
		}, found)
	case <-time.After(20 * time.Second):
		t.Fatal("the guard hangs on a named pipe")
	}
	data, err := os.ReadFile(filepath.Join(gd, "packed-refs"))
	require.NoError(t, err)
	assert.Equal(t, string(packed), string(data))
	assert.NoFileExists(t, filepath.Join(gd, "commondir"))
	assert.Equal(t, main, git("rev-parse", "main"))
}

// TestGuardRestoredBacklogKeepsTheReplacedFile: without confinement the guard cannot tell
// an agent's rewrite of the backlog from a person's (a `git pull` or `git checkout` that
// brings a teammate's tasks, sed -i, an editor that saves by rename) during a step. It puts
// the backlog back as the step found it, but the file it replaces is kept, and said where.
func TestGuardRestoredBacklogKeepsTheReplacedFile(t *testing.T) {
	ctx := context.Background()
	_, ws := guardFixture(t)
	ws.guard = &guard.Guard{JSONLBacklog: true}
	jsonl := filepath.Join(ws.root, ".beads", "issues.jsonl")
	ws.linkBacklog()
	snap := ws.fingerprint()
	before, err := os.ReadFile(jsonl)
	require.NoError(t, err)
	pulled := string(before) + `{"_type":"issue","id":"norma-tm","title":"a teammate's task","status":"open","priority":2,"issue_type":"task","created_at":"2026-11-01T10:00:00Z","updated_at":"2026-11-01T10:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(jsonl+".new", []byte(pulled), 0o644))
	require.NoError(t, os.Rename(jsonl+".new", jsonl))

	changed, err := ws.OutsideChanges(ctx, loopSnapshot(snap))
	require.NoError(t, err)
	require.Len(t, changed, 1)
	now, err := os.ReadFile(jsonl)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(now), "restored")
	kept := filepath.Join(ws.runDir, backlogReplacedName)
	data, err := os.ReadFile(kept)
	require.NoError(t, err, "the backlog the step left was lost: %s", changed[0])
	assert.Equal(t, pulled, string(data))
	rel, _ := filepath.Rel(ws.root, kept)
	assert.Equal(t, ".beads/issues.jsonl (restored; the file it replaced is kept as "+rel+")", changed[0])
}

// An agent may not plant a link, a FIFO or a directory where a guarded worktree.setup writes
// its log (the run dir's setup.txt, skipped by the fingerprint for that log's sake): a resumed
// run's setup would append its output wherever the link points, or hang on the FIFO.
func TestGuardCatchesALinkPlantedAsTheSetupLog(t *testing.T) {
	ctx := context.Background()
	_, ws := guardFixture(t)
	setupLog := filepath.Join(ws.runDir, "setup.txt")
	t.Run("a log git-norma writes is no change", func(t *testing.T) {
		snap := loopSnapshot(ws.fingerprint())
		log := &lazyLog{path: setupLog}
		_, err := log.Write([]byte("setting up\n"))
		require.NoError(t, err)
		log.Close()
		changed, err := ws.OutsideChanges(ctx, snap)
		require.NoError(t, err)
		assert.Empty(t, changed)
		require.NoError(t, os.Remove(setupLog))
	})
	t.Run("a link is", func(t *testing.T) {
		snap := loopSnapshot(ws.fingerprint())
		require.NoError(t, os.Symlink(filepath.Join(ws.root, ".git", "config"), setupLog))
		changed, err := ws.OutsideChanges(ctx, snap)
		require.NoError(t, err)
		assert.NotEmpty(t, changed)
		log := &lazyLog{path: setupLog}
		_, err = log.Write([]byte("[alias]\n\tst = !touch pwned\n"))
		log.Close()
		assert.Error(t, err, "the log is never written through a link")
		config, err := os.ReadFile(filepath.Join(ws.root, ".git", "config"))
		require.NoError(t, err)
		assert.NotContains(t, string(config), "pwned")
	})
}

// agentDB is a connection of its own to the run store, as an unconfined agent would open one.
func agentDB(t *testing.T, app *App) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", app.Repo.Path("norma.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}
