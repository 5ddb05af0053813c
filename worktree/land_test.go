package worktree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const taskBranch = "norma/task/T-1"

// landFixture is a repository whose main holds README.md, a.txt and keep.txt.
func landFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.repo.WriteFile("a.txt", "a\n")
	f.repo.WriteFile("keep.txt", "keep\n")
	f.repo.Commit("base files")
	return f
}

func (f *fixture) land(msg string) (LandResult, error) {
	f.t.Helper()
	if msg == "" {
		msg = "feat: land T-1\n\nNorma-Task: T-1\n"
	}
	return f.m.Land(f.ctx, LandOptions{Target: "main", TaskBranch: taskBranch, Message: msg})
}

// checkoutSnapshot is what must survive a landing in a checkout: status, index and files.
type checkoutSnapshot struct {
	head, status, index, staged string
	files                       map[string]string
}

func (f *fixture) snapshot(dir string, files ...string) checkoutSnapshot {
	f.t.Helper()
	s := checkoutSnapshot{
		head:   f.gitIn(dir, "rev-parse", "HEAD"),
		status: f.gitIn(dir, "status", "--porcelain", "--untracked-files=all"),
		index:  f.gitIn(dir, "ls-files", "-s"),
		staged: f.gitIn(dir, "diff", "--cached", "--name-status"),
		files:  map[string]string{},
	}
	for _, rel := range files {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err == nil {
			s.files[rel] = string(b)
		}
	}
	return s
}

func TestLandOnUnchangedTarget(t *testing.T) {
	f := landFixture(t)
	old := f.rev("main")
	tip := f.commitOn(taskBranch, "main", map[string]string{"a.txt": "a from task\n", "new/b.txt": "b\n", "keep.txt": ""}, "step 1")
	f.commitOn(taskBranch, "", map[string]string{"c.txt": "c\n"}, "step 2")
	tip = f.rev(taskBranch)

	res, err := f.land("")
	require.NoError(t, err)

	assert.False(t, res.Empty)
	assert.Equal(t, old, res.Parent)
	assert.Equal(t, res.Commit, f.rev("main"), "target moved to the squash commit")
	assert.Equal(t, old, f.rev(res.Commit+"^"))
	assert.Equal(t, "1", f.git("rev-list", "--count", old+".."+res.Commit), "one squash commit")
	assert.Equal(t, []string{old}, strings.Fields(f.git("log", "-1", "--format=%P", res.Commit)), "exactly one parent")
	assert.Equal(t, f.rev(tip+"^{tree}"), f.rev(res.Commit+"^{tree}"), "tree is the merge result")
	assert.Equal(t, tip, f.rev(taskBranch), "task branch kept")
	// main is checked out in the main worktree: it is advanced there.
	assert.Equal(t, realPath(t, f.repo.Dir), realPath(t, res.Checkout))
	assert.Equal(t, "a from task\n", readFile(t, f.repo.Dir, "a.txt"))
	assert.NoFileExists(t, filepath.Join(f.repo.Dir, "keep.txt"))
	assert.Empty(t, f.git("status", "--porcelain", "--untracked-files=all"))
}

// What lands is the verified commit, even when the branch moved on after it was verified.
func TestLandLandsTheVerifiedHead(t *testing.T) {
	f := landFixture(t)
	verified := f.commitOn(taskBranch, "main", map[string]string{"a.txt": "verified\n"}, "step 1")
	f.commitOn(taskBranch, "", map[string]string{"late.txt": "never verified\n"}, "a commit after the check")

	res, err := f.m.Land(f.ctx, LandOptions{Target: "main", TaskBranch: taskBranch, Head: verified, Message: "feat: land T-1\n"})
	require.NoError(t, err)
	assert.Equal(t, f.rev(verified+"^{tree}"), f.rev(res.Commit+"^{tree}"), "exactly the verified tree landed")
	assert.Equal(t, "verified", f.show("main", "a.txt"))
	assert.NotContains(t, f.treeFiles("main"), "late.txt")
}

func TestLandOnMovedTarget(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "a from task\n", "task.txt": "t\n"}, "task work")
	f.repo.WriteFile("keep.txt", "keep moved on target\n")
	f.repo.WriteFile("target.txt", "target\n")
	moved := f.repo.Commit("target moves")

	res, err := f.land("")
	require.NoError(t, err)

	assert.Equal(t, moved, res.Parent, "built on the new tip")
	assert.Equal(t, moved, f.rev(res.Commit+"^"))
	assert.Equal(t, res.Commit, f.rev("main"))
	assert.Equal(t, []string{"README.md", "a.txt", "keep.txt", "target.txt", "task.txt"}, f.treeFiles(res.Commit))
	assert.Equal(t, "a from task", f.show(res.Commit, "a.txt"))
	assert.Equal(t, "keep moved on target", f.show(res.Commit, "keep.txt"))
	assert.Equal(t, "target", f.show(res.Commit, "target.txt"))
	assert.Equal(t, "t", f.show(res.Commit, "task.txt"))
	expected := strings.SplitN(f.git("merge-tree", "--write-tree", moved, taskBranch), "\n", 2)[0]
	assert.Equal(t, expected, f.rev(res.Commit+"^{tree}"))
}

func TestLandConflict(t *testing.T) {
	tests := []struct {
		name         string
		task, target map[string]string
		want         []string
	}{
		{"content", map[string]string{"a.txt": "task\n"}, map[string]string{"a.txt": "target\n"}, []string{"a.txt"}},
		{"modify/delete", map[string]string{"a.txt": "task\n"}, map[string]string{"a.txt": ""}, []string{"a.txt"}},
		{"add/add", map[string]string{"n.txt": "task\n"}, map[string]string{"n.txt": "target\n"}, []string{"n.txt"}},
		{"several, clean ones left out",
			map[string]string{"a.txt": "task\n", "dir/x y.txt": "task\n", "clean.txt": "c\n"},
			map[string]string{"a.txt": "target\n", "dir/x y.txt": "target\n", "keep.txt": "k2\n"},
			[]string{"a.txt", "dir/x y.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := landFixture(t)
			f.commitOn(taskBranch, "main", tc.task, "task")
			f.git("checkout", "-q", "-b", "elsewhere") // target moved by someone else, not checked out
			f.commitOn("main", "", tc.target, "target")
			before := f.refBytes("main")
			tip := f.rev("main")
			require.NotEmpty(t, strings.TrimRight(before, "\x00"))

			res, err := f.land("")
			require.Error(t, err)

			var le *LandError
			require.True(t, errors.As(err, &le), "%T %v", err, err)
			assert.ErrorIs(t, err, ErrConflict)
			assert.NotErrorIs(t, err, ErrDirtyOverlap)
			assert.ElementsMatch(t, tc.want, le.Paths)
			for _, p := range tc.want {
				assert.Contains(t, err.Error(), p)
			}
			assert.Empty(t, res.Commit)
			assert.Equal(t, before, f.refBytes("main"), "target ref byte-for-byte unchanged")
			assert.Equal(t, tip, f.rev("main"))
		})
	}
}

func TestLandRefusesDirtyOverlap(t *testing.T) {
	tests := []struct {
		name  string
		dirty func(f *fixture)
		want  []string
	}{
		{"unstaged edit", func(f *fixture) { f.repo.WriteFile("a.txt", "user edit\n") }, []string{"a.txt"}},
		{"staged edit", func(f *fixture) {
			f.repo.WriteFile("a.txt", "user edit\n")
			f.git("add", "a.txt")
		}, []string{"a.txt"}},
		{"staged and unstaged on two paths", func(f *fixture) {
			f.repo.WriteFile("a.txt", "user edit\n")
			f.repo.WriteFile("sub/b.txt", "user b\n")
			f.git("add", "sub/b.txt")
			f.repo.WriteFile("sub/b.txt", "user b again\n")
		}, []string{"a.txt", "sub/b.txt"}},
		{"untracked file the task adds", func(f *fixture) { f.repo.WriteFile("sub/b.txt", "user's own\n") }, []string{"sub/b.txt"}},
		{"edit of a file the task deletes", func(f *fixture) { f.repo.WriteFile("keep.txt", "user keeps\n") }, []string{"keep.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := landFixture(t)
			f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n", "sub/b.txt": "task b\n", "keep.txt": ""}, "task")
			tip := f.rev("main")
			before := f.refBytes("main")
			tc.dirty(f)
			snap := f.snapshot(f.repo.Dir, "a.txt", "sub/b.txt", "keep.txt")

			res, err := f.land("")

			var le *LandError
			require.True(t, errors.As(err, &le), "%T %v", err, err)
			assert.ErrorIs(t, err, ErrDirtyOverlap)
			assert.ElementsMatch(t, tc.want, le.Paths)
			assert.Equal(t, realPath(t, f.repo.Dir), realPath(t, res.Checkout))
			assert.Equal(t, tip, f.rev("main"), "target unchanged")
			assert.Equal(t, before, f.refBytes("main"))
			assert.Equal(t, snap, f.snapshot(f.repo.Dir, "a.txt", "sub/b.txt", "keep.txt"), "user's edits and index intact")
		})
	}
}

// Regression: with the user's merge.autoStash=true, `git merge --ff-only` stashed the
// overlapping edit, moved the target anyway and left conflict markers in the user's file.
func TestLandDirtyOverlapIgnoresAutoStash(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")
	f.git("config", "merge.autoStash", "true")
	tip := f.rev("main")
	f.repo.WriteFile("a.txt", "user edit\n")
	snap := f.snapshot(f.repo.Dir, "a.txt")

	_, err := f.land("")

	require.ErrorIs(t, err, ErrDirtyOverlap)
	assert.Equal(t, tip, f.rev("main"))
	assert.Equal(t, "user edit\n", readFile(t, f.repo.Dir, "a.txt"))
	assert.Equal(t, snap, f.snapshot(f.repo.Dir, "a.txt"))
	assert.Empty(t, f.git("stash", "list"), "nothing stashed")
}

func TestLandDirtyNonOverlapping(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n", "task/new.txt": "n\n"}, "task")
	old := f.rev("main")
	f.repo.WriteFile("keep.txt", "user edit, unstaged\n")
	f.repo.WriteFile("staged.txt", "user new file, staged\n")
	f.git("add", "staged.txt")
	f.repo.WriteFile("README.md", "# staged edit\n")
	f.git("add", "README.md")
	f.repo.WriteFile("README.md", "# staged edit, then edited again\n")
	f.repo.WriteFile("notes/untracked.txt", "untracked\n")
	files := []string{"keep.txt", "staged.txt", "README.md", "notes/untracked.txt"}
	before := f.snapshot(f.repo.Dir, files...)
	stagedBlob := f.git("rev-parse", ":staged.txt")
	readmeBlob := f.git("rev-parse", ":README.md")

	res, err := f.land("")
	require.NoError(t, err)

	assert.Equal(t, old, res.Parent)
	assert.Equal(t, res.Commit, f.rev("main"))
	assert.Equal(t, realPath(t, f.repo.Dir), realPath(t, res.Checkout), "landed through the checkout")
	assert.Equal(t, res.Commit, f.git("rev-parse", "HEAD"))
	assert.Equal(t, "refs/heads/main", f.git("symbolic-ref", "HEAD"))
	assert.Equal(t, "task\n", readFile(t, f.repo.Dir, "a.txt"), "the squash's files are checked out")
	assert.Equal(t, "n\n", readFile(t, f.repo.Dir, "task/new.txt"))

	after := f.snapshot(f.repo.Dir, files...)
	assert.Equal(t, before.status, after.status, "git status unchanged")
	assert.Equal(t, before.staged, after.staged, "staged changes unchanged")
	assert.Equal(t, before.files, after.files, "working tree edits unchanged")
	assert.Equal(t, stagedBlob, f.git("rev-parse", ":staged.txt"))
	assert.Equal(t, readmeBlob, f.git("rev-parse", ":README.md"))
	// The squash commit itself carries none of the user's edits.
	assert.Equal(t, "keep", f.show(res.Commit, "keep.txt"))
	assert.Equal(t, "# test", f.show(res.Commit, "README.md"))
	assert.NotContains(t, f.treeFiles(res.Commit), "staged.txt")
	// The merge was a fast-forward through git (reflog of the checkout's HEAD).
	assert.Contains(t, f.git("reflog", "-1", "--format=%gs", "HEAD"), "Fast-forward")
}

func TestLandAdvancesSecondLinkedWorktree(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")
	old := f.rev("main")
	f.git("checkout", "-q", "-b", "elsewhere")
	second := filepath.Join(t.TempDir(), "second checkout")
	f.git("worktree", "add", "-q", second, "main")
	mainBefore := f.snapshot(f.repo.Dir, "a.txt")

	res, err := f.land("")
	require.NoError(t, err)

	assert.Equal(t, realPath(t, second), realPath(t, res.Checkout))
	assert.Equal(t, old, res.Parent)
	assert.Equal(t, res.Commit, f.rev("main"))
	assert.Equal(t, res.Commit, f.gitIn(second, "rev-parse", "HEAD"), "the checkout's HEAD advanced")
	assert.Equal(t, "refs/heads/main", f.gitIn(second, "symbolic-ref", "HEAD"))
	assert.Equal(t, "task\n", readFile(t, second, "a.txt"), "the checkout's files updated")
	assert.Empty(t, f.gitIn(second, "status", "--porcelain", "--untracked-files=all"))
	assert.Equal(t, mainBefore, f.snapshot(f.repo.Dir, "a.txt"), "main worktree untouched")
	assert.Equal(t, "refs/heads/elsewhere", f.git("symbolic-ref", "HEAD"))
}

func TestLandTargetNotCheckedOut(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")
	old := f.rev("main")
	f.git("checkout", "-q", "-b", "elsewhere")
	f.repo.WriteFile("a.txt", "user edit on another branch\n")
	before := f.snapshot(f.repo.Dir, "a.txt")

	res, err := f.land("")
	require.NoError(t, err)

	assert.Empty(t, res.Checkout)
	assert.Equal(t, old, res.Parent)
	assert.Equal(t, res.Commit, f.rev("main"))
	assert.Equal(t, old, f.rev(res.Commit+"^"))
	assert.Equal(t, "norma: land "+taskBranch, f.git("reflog", "-1", "--format=%gs", "refs/heads/main"), "moved by update-ref")
	assert.Equal(t, before, f.snapshot(f.repo.Dir, "a.txt"), "main worktree untouched")
	assert.Equal(t, "refs/heads/elsewhere", f.git("symbolic-ref", "HEAD"))
}

func TestLandEmpty(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"branch is the target", func(f *fixture) { f.git("branch", taskBranch, "main") }},
		{"branch commits nothing", func(f *fixture) {
			f.git("branch", taskBranch, "main")
			f.commitOn(taskBranch, "", nil, "empty")
		}},
		{"change already on target", func(f *fixture) {
			f.commitOn(taskBranch, "main", map[string]string{"a.txt": "same\n"}, "task")
			f.repo.WriteFile("a.txt", "same\n")
			f.repo.Commit("same change on target")
		}},
		{"change and its revert", func(f *fixture) {
			f.commitOn(taskBranch, "main", map[string]string{"x.txt": "x\n"}, "add")
			f.commitOn(taskBranch, "", map[string]string{"x.txt": ""}, "revert")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := landFixture(t)
			tc.setup(f)
			tip := f.rev("main")
			before := f.refBytes("main")
			objects := f.git("count-objects")

			res, err := f.land("")
			require.NoError(t, err)

			assert.True(t, res.Empty)
			assert.Empty(t, res.Commit)
			assert.Equal(t, tip, res.Parent)
			assert.Equal(t, tip, f.rev("main"))
			assert.Equal(t, before, f.refBytes("main"))
			assert.Equal(t, objects, f.git("count-objects"), "no commit object written")
		})
	}
}

func TestLandMessageVerbatim(t *testing.T) {
	msg := "feat(worktree): land the thing\n" +
		"\n" +
		"Goal: make it work.   \n" +
		"# not a comment, kept\n" +
		"\n" +
		"Acceptance:\n" +
		"- [x] tests pass\n" +
		"\n" +
		"Norma-Task: T-1\n" +
		"Norma-Run: 20240101-abc\n" +
		"Norma-Step: 004\n" +
		"Norma-Verdict: PASS\n"
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")

	res, err := f.land(msg)
	require.NoError(t, err)

	raw := f.git("cat-file", "commit", res.Commit)
	_, body, ok := strings.Cut(raw, "\n\n")
	require.True(t, ok)
	// Output trims the trailing newline of git's stdout.
	assert.Equal(t, strings.TrimSuffix(msg, "\n"), body)
	assert.Equal(t, "Norma-Task: T-1\nNorma-Run: 20240101-abc\nNorma-Step: 004\nNorma-Verdict: PASS", f.trailers(res.Commit))
	assert.Equal(t, "feat(worktree): land the thing", f.git("log", "-1", "--format=%s", res.Commit))
	assert.Equal(t, "Test User <test@example.com>", f.git("log", "-1", "--format=%an <%ae>", res.Commit))
}

// A target whose compare-and-swap keeps failing is retried a bounded number of times and
// reported as ErrTargetMoved, with the target unchanged.
func TestLandTargetKeepsMoving(t *testing.T) {
	f := landFixture(t)
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")
	f.git("checkout", "-q", "-b", "elsewhere")
	tip := f.rev("main")
	count := filepath.Join(t.TempDir(), "attempts")
	f.installHook("reference-transaction", fmt.Sprintf(`if [ "$1" = prepared ]; then echo x >> '%s'; exit 1; fi`, count))

	_, err := f.land("")

	var le *LandError
	require.True(t, errors.As(err, &le), "%T %v", err, err)
	assert.ErrorIs(t, err, ErrTargetMoved)
	assert.NotEmpty(t, le.Detail)
	assert.Equal(t, tip, f.rev("main"))
	b, rerr := os.ReadFile(count)
	require.NoError(t, rerr)
	assert.Equal(t, landAttempts, strings.Count(string(b), "x"), "bounded retries")
}

func TestFastForwardCheckoutNotFastForward(t *testing.T) {
	f := landFixture(t)
	// A commit that does not descend from the checked-out main.
	side := f.commitOn("side", "main~1", map[string]string{"s.txt": "s\n"}, "side")
	tip := f.rev("main")

	err := f.m.fastForwardCheckout(f.ctx, f.repo.Dir, side)

	require.ErrorIs(t, err, ErrTargetMoved)
	assert.Equal(t, tip, f.rev("main"))
}

func TestOverwrittenPaths(t *testing.T) {
	tests := []struct {
		name, stderr string
		want         []string
	}{
		{"tracked",
			"error: Your local changes to the following files would be overwritten by merge:\n\ta.txt\n\tdir/b c.txt\nPlease commit your changes or stash them before you merge.\nAborting\n",
			[]string{"a.txt", "dir/b c.txt"}},
		{"untracked",
			"error: The following untracked working tree files would be overwritten by merge:\n\tnew.txt\nPlease move or remove them before you merge.\nAborting\n",
			[]string{"new.txt"}},
		{"removed",
			"error: The following untracked working tree files would be removed by merge:\n\told.txt\nAborting\n",
			[]string{"old.txt"}},
		{"other failure", "fatal: Not possible to fast-forward, aborting.\n", nil},
		{"tab lines without the phrase", "hint:\tsomething\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, overwrittenPaths(tc.stderr))
		})
	}
}

func TestLandErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *LandError
		want string
	}{
		{"paths", &LandError{Err: ErrConflict, Paths: []string{"a", "b c"}}, ErrConflict.Error() + ": a, b c"},
		{"detail", &LandError{Err: ErrTargetMoved, Detail: "cannot lock ref"}, ErrTargetMoved.Error() + ": cannot lock ref"},
		{"bare", &LandError{Err: ErrDirtyOverlap}, ErrDirtyOverlap.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
			assert.ErrorIs(t, fmt.Errorf("wrapped: %w", tc.err), tc.err.Err)
		})
	}
}

func TestUniq(t *testing.T) {
	assert.Equal(t, []string{"a", "b"}, uniq([]string{"a", "", "a", "b", "a"}))
	assert.Nil(t, uniq(nil))
}

// TestLandIgnoresAnAgentsClaimOnTheTarget: an agent may write its run worktree's git
// directory. One that sets its HEAD to the target, and points the worktree's .git file at a
// repository of its own with hooks, does not become the target's checkout: the landing
// fast-forwards your checkout, runs nothing of the agent's and leaves its worktree alone.
func TestLandIgnoresAnAgentsClaimOnTheTarget(t *testing.T) {
	f := landFixture(t)
	f.m.RunsDir = filepath.Join(f.repo.Dir, ".norma", "runs")
	f.commitOn(taskBranch, "main", map[string]string{"a.txt": "task\n"}, "task")
	ws := f.createInside("T-9", "R-9")
	common := f.git("rev-parse", "--path-format=absolute", "--git-common-dir")
	marker := filepath.Join(t.TempDir(), "pwned")
	fake := filepath.Join(ws.Dir(), ".evil")
	for name, content := range map[string]string{
		"objects/info/alternates":     filepath.Join(common, "objects") + "\n",
		"refs/heads/main":             f.rev("main") + "\n",
		"HEAD":                        "ref: refs/heads/main\n",
		"config":                      "[core]\n\tbare = false\n\thooksPath = " + filepath.Join(fake, "hooks") + "\n",
		"hooks/post-merge":            "#!/bin/sh\necho post-merge >> " + marker + "\n",
		"hooks/reference-transaction": "#!/bin/sh\necho reference-transaction >> " + marker + "\n",
	} {
		writeFile(t, fake, name, content)
		require.NoError(t, os.Chmod(filepath.Join(fake, name), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(ws.Dir(), ".git"), []byte("gitdir: "+fake+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws.GitDir(), "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))

	old := f.rev("main")
	res, err := f.land("")
	require.NoError(t, err)

	assert.Equal(t, realPath(t, f.repo.Dir), realPath(t, res.Checkout))
	assert.Equal(t, res.Commit, f.rev("main"))
	assert.Equal(t, "task\n", readFile(t, f.repo.Dir, "a.txt"), "your checkout advanced")
	assert.Empty(t, f.git("status", "--porcelain", "--untracked-files=no"))
	assert.NoFileExists(t, marker, "a hook of the agent's ran")
	assert.Equal(t, old+"\n", readFile(t, fake, "refs/heads/main"), "the agent's repository was fast-forwarded")
}
