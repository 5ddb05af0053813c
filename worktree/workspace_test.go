package worktree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// wsFixture is a fixture with one run workspace whose branch forks from a target holding
// README.md, keep.txt and gone.txt.
func wsFixture(t *testing.T) (*fixture, *Workspace) {
	t.Helper()
	f := newFixture(t)
	f.repo.WriteFile("keep.txt", "keep\n")
	f.repo.WriteFile("gone.txt", "to be deleted\n")
	f.repo.Commit("second")
	return f, f.create("T-1", "R-1")
}

// commitModes runs a Commit test with and without ExpectChanges: both ways must commit, fold,
// refuse and measure the same.
func commitModes(t *testing.T, test func(t *testing.T, expect bool)) {
	for _, expect := range []bool{false, true} {
		t.Run(fmt.Sprintf("expect changes %v", expect), func(t *testing.T) { test(t, expect) })
	}
}

func (f *fixture) state(ws *Workspace) State {
	f.t.Helper()
	s, err := ws.State(f.ctx)
	require.NoError(f.t, err)
	return s
}

func TestCommitAllChanges(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		f, ws := wsFixture(t)
		since := f.state(ws)

		writeFile(t, ws.Dir(), "README.md", "# modified\n")
		writeFile(t, ws.Dir(), "pkg/new file.go", "package pkg\n")
		require.NoError(t, os.Remove(filepath.Join(ws.Dir(), "gone.txt")))

		res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, Summary: "Implemented the thing.", ExpectChanges: expect})
		require.NoError(t, err)

		assert.True(t, res.Changed)
		assert.Zero(t, res.AgentCommits)
		assert.Equal(t, f.rev("refs/heads/norma/task/T-1"), res.Commit)
		assert.Equal(t, since.Head, f.rev(res.Commit+"^"), "parent is the step's starting point")
		assert.Empty(t, f.gitIn(ws.Dir(), "status", "--porcelain", "--untracked-files=all"), "nothing left uncommitted")
		assert.Equal(t, []string{"README.md", "keep.txt", "pkg/new file.go"}, f.treeFiles(res.Commit))
		assert.Equal(t, "# modified", f.show(res.Commit, "README.md"))
		assert.Equal(t, "package pkg", f.show(res.Commit, "pkg/new file.go"))
		assert.Equal(t, "chore(norma): do step 002 of T-1 (iteration 1)", f.git("log", "-1", "--format=%s", res.Commit))
		assert.Equal(t, "Norma-Task: T-1\nNorma-Run: R-1\nNorma-Step: 002\nNorma-Role: do", f.trailers(res.Commit))
		assert.Contains(t, f.git("log", "-1", "--format=%b", res.Commit), "Implemented the thing.")
		assert.Equal(t, "Test User", f.git("log", "-1", "--format=%an", res.Commit))
	})
}

func TestCommitTrailersParse(t *testing.T) {
	long := strings.Repeat("word ", 60) + "Key: value that looks like a trailer"
	tests := []struct {
		name    string
		sc      StepCommit
		subject string
		step    string
	}{
		{"no summary", StepCommit{Role: "do", StepIndex: 1, Iteration: 1}, "chore(norma): do step 001 of T-1 (iteration 1)", "001"},
		{"two digits", StepCommit{Role: "act", StepIndex: 12, Iteration: 3, Summary: "fixed"}, "chore(norma): act step 012 of T-1 (iteration 3)", "012"},
		{"three digits", StepCommit{Role: "do", StepIndex: 123, Iteration: 31, Summary: "x"}, "chore(norma): do step 123 of T-1 (iteration 31)", "123"},
		{"trailer-like summary", StepCommit{Role: "do", StepIndex: 7, Iteration: 2, Summary: "Fixes: #12\nSigned-off-by: someone"}, "chore(norma): do step 007 of T-1 (iteration 2)", "007"},
		{"long multi-line summary", StepCommit{Role: "do", StepIndex: 4, Iteration: 1, Summary: long + "\n\n\nmore"}, "chore(norma): do step 004 of T-1 (iteration 1)", "004"},
		{"comment-like summary", StepCommit{Role: "do", StepIndex: 5, Iteration: 1, Summary: "# heading kept"}, "chore(norma): do step 005 of T-1 (iteration 1)", "005"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ws := wsFixture(t)
			since := f.state(ws)
			writeFile(t, ws.Dir(), "f.txt", tc.name+"\n")

			res, err := ws.Commit(f.ctx, since, tc.sc)
			require.NoError(t, err)
			require.True(t, res.Changed)

			assert.Equal(t, tc.subject, f.git("log", "-1", "--format=%s", res.Commit))
			want := "Norma-Task: T-1\nNorma-Run: R-1\nNorma-Step: " + tc.step + "\nNorma-Role: " + tc.sc.Role
			assert.Equal(t, want, f.trailers(res.Commit))
			body := f.git("log", "-1", "--format=%B", res.Commit)
			for _, line := range strings.Split(body, "\n") {
				assert.LessOrEqual(t, utf8.RuneCountInString(line), 72, "line %q", line)
			}
			for _, w := range strings.Fields(tc.sc.Summary) {
				assert.Contains(t, body, w, "the summary is kept")
			}
		})
	}
}

func TestCommitNoChanges(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		f, ws := wsFixture(t)
		since := f.state(ws)

		res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 1, Iteration: 1, ExpectChanges: expect})
		require.NoError(t, err)

		assert.False(t, res.Changed)
		assert.Equal(t, since.Head, res.Commit)
		assert.Equal(t, since.Head, f.rev("refs/heads/norma/task/T-1"), "no new commit")
		assert.Zero(t, res.PatchBytes, "branch equals its base")
	})
}

func TestCommitFoldsAgentCommits(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		tests := []struct {
			name        string
			commits     []map[string]string // each map is one agent commit ("" deletes)
			uncommitted map[string]string
			wantChanged bool
			wantFiles   map[string]string
			wantTree    []string
		}{
			{
				name:        "two agent commits plus uncommitted edits",
				commits:     []map[string]string{{"a.txt": "agent 1\n"}, {"b.txt": "agent 2\n", "gone.txt": ""}},
				uncommitted: map[string]string{"c.txt": "not committed\n", "README.md": "# edited\n"},
				wantChanged: true,
				wantFiles:   map[string]string{"a.txt": "agent 1", "b.txt": "agent 2", "c.txt": "not committed", "README.md": "# edited"},
				wantTree:    []string{"README.md", "a.txt", "b.txt", "c.txt", "keep.txt"},
			},
			{
				name:        "agent commits only",
				commits:     []map[string]string{{"a.txt": "agent\n"}},
				wantChanged: true,
				wantFiles:   map[string]string{"a.txt": "agent"},
				wantTree:    []string{"README.md", "a.txt", "gone.txt", "keep.txt"},
			},
			{
				name:        "agent commit then revert",
				commits:     []map[string]string{{"a.txt": "agent\n"}, {"a.txt": ""}},
				wantChanged: false,
				wantTree:    []string{"README.md", "gone.txt", "keep.txt"},
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f, ws := wsFixture(t)
				since := f.state(ws)
				for i, c := range tc.commits {
					for rel, content := range c {
						if content == "" {
							require.NoError(t, os.Remove(filepath.Join(ws.Dir(), rel)))
						} else {
							writeFile(t, ws.Dir(), rel, content)
						}
					}
					f.gitIn(ws.Dir(), "add", "-A")
					f.gitIn(ws.Dir(), "commit", "-q", "-m", "agent commit "+string(rune('1'+i)))
				}
				for rel, content := range tc.uncommitted {
					writeFile(t, ws.Dir(), rel, content)
				}

				res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 3, Iteration: 1, ExpectChanges: expect})
				require.NoError(t, err)

				assert.Equal(t, len(tc.commits), res.AgentCommits)
				assert.Equal(t, tc.wantChanged, res.Changed)
				tip := f.rev("refs/heads/norma/task/T-1")
				assert.Equal(t, tip, res.Commit)
				if tc.wantChanged {
					assert.Equal(t, since.Head, f.rev(tip+"^"), "one orchestrator commit on the snapshot")
					assert.Equal(t, "1", f.git("rev-list", "--count", since.Head+".."+tip))
					assert.Equal(t, "Norma-Task: T-1\nNorma-Run: R-1\nNorma-Step: 003\nNorma-Role: do", f.trailers(tip))
				} else {
					assert.Equal(t, since.Head, tip, "net-empty agent commits leave the branch at the snapshot")
				}
				assert.Equal(t, tc.wantTree, f.treeFiles(tip))
				for rel, want := range tc.wantFiles {
					assert.Equal(t, want, f.show(tip, rel), rel)
				}
				assert.Empty(t, f.gitIn(ws.Dir(), "status", "--porcelain", "--untracked-files=all"))
			})
		}
	})
}

func TestCommitRefusesBranchSwitch(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		tests := []struct {
			name string
			move func(f *fixture, dir string)
		}{
			{"detached HEAD", func(f *fixture, dir string) { f.gitIn(dir, "checkout", "-q", "--detach") }},
			{"other branch", func(f *fixture, dir string) { f.gitIn(dir, "checkout", "-q", "-b", "agent-branch") }},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f, ws := wsFixture(t)
				since := f.state(ws)
				writeFile(t, ws.Dir(), "a.txt", "work\n")
				tc.move(f, ws.Dir())

				_, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 1, Iteration: 1, ExpectChanges: expect})
				require.ErrorIs(t, err, ErrBranchSwitched)
				assert.NotErrorIs(t, err, ErrHistoryRewritten)
				assert.Equal(t, since.Head, f.rev("refs/heads/norma/task/T-1"), "task branch untouched")
				assert.Equal(t, "work\n", readFile(t, ws.Dir(), "a.txt"), "work not discarded")
			})
		}
	})
}

func TestCommitRefusesHistoryRewrite(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		tests := []struct {
			name    string
			rewrite func(f *fixture, dir string)
		}{
			{"reset to an older commit", func(f *fixture, dir string) { f.gitIn(dir, "reset", "-q", "--hard", "HEAD~1") }},
			{"amend", func(f *fixture, dir string) {
				writeFile(f.t, dir, "amended.txt", "x\n")
				f.gitIn(dir, "add", "-A")
				f.gitIn(dir, "commit", "-q", "--amend", "-m", "amended")
			}},
			{"rebase onto another commit", func(f *fixture, dir string) {
				f.gitIn(dir, "reset", "-q", "--hard", "HEAD~1")
				writeFile(f.t, dir, "new.txt", "x\n")
				f.gitIn(dir, "add", "-A")
				f.gitIn(dir, "commit", "-q", "-m", "diverged")
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f, ws := wsFixture(t)
				// A first orchestrator step, so there is history to rewrite.
				writeFile(t, ws.Dir(), "step1.txt", "one\n")
				first, err := ws.Commit(f.ctx, f.state(ws), StepCommit{Role: "do", StepIndex: 1, Iteration: 1, ExpectChanges: expect})
				require.NoError(t, err)
				since := f.state(ws)
				require.Equal(t, first.Commit, since.Head)

				tc.rewrite(f, ws.Dir())
				rewritten := f.rev("refs/heads/norma/task/T-1")

				_, err = ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: expect})
				require.ErrorIs(t, err, ErrHistoryRewritten)
				assert.NotErrorIs(t, err, ErrBranchSwitched)
				assert.Equal(t, since.Head, f.rev("refs/heads/norma/task/T-1"), "nothing committed; the branch is back where the step began")
				assert.Equal(t, rewritten, f.rev(AttemptsPrefix+"T-1/1"), "the agent's history is kept")
				assert.Equal(t, "one\n", readFile(t, ws.Dir(), "step1.txt"), "and the worktree is the branch's")
			})
		}
	})
}

func TestCommitPatchBytesGrows(t *testing.T) {
	commitModes(t, func(t *testing.T, expect bool) {
		f, ws := wsFixture(t)

		writeFile(t, ws.Dir(), "a.txt", "small\n")
		r1, err := ws.Commit(f.ctx, f.state(ws), StepCommit{Role: "do", StepIndex: 1, Iteration: 1, ExpectChanges: expect})
		require.NoError(t, err)
		require.True(t, r1.Changed)

		writeFile(t, ws.Dir(), "b.bin", string(bytes.Repeat([]byte{0, 1, 2, 3, 255}, 2000)))
		writeFile(t, ws.Dir(), "c.txt", strings.Repeat("line\n", 500))
		r2, err := ws.Commit(f.ctx, f.state(ws), StepCommit{Role: "act", StepIndex: 4, Iteration: 1, ExpectChanges: expect})
		require.NoError(t, err)
		require.True(t, r2.Changed)

		r3, err := ws.Commit(f.ctx, f.state(ws), StepCommit{Role: "do", StepIndex: 5, Iteration: 2, ExpectChanges: expect})
		require.NoError(t, err)
		require.False(t, r3.Changed)

		assert.Positive(t, r1.PatchBytes)
		assert.Greater(t, r2.PatchBytes, r1.PatchBytes+2500)
		assert.Equal(t, r2.PatchBytes, r3.PatchBytes, "no change, same patch")

		var buf bytes.Buffer
		require.NoError(t, git.Runner{Dir: ws.Dir()}.Stream(f.ctx, &buf, "diff", "--binary", "--no-color", ws.Base(), "HEAD"))
		assert.Equal(t, int64(buf.Len()), r2.PatchBytes, "the whole task diff against its base")
	})
}

func TestCommitIgnoresFailingHooks(t *testing.T) {
	f, ws := wsFixture(t)
	f.installHook("pre-commit", "echo refused >&2; exit 1")
	f.installHook("commit-msg", "exit 1")

	// The hook really applies to this worktree.
	writeFile(t, ws.Dir(), "a.txt", "work\n")
	f.gitIn(ws.Dir(), "add", "-A")
	_, err := git.Runner{Dir: ws.Dir()}.Output(f.ctx, "commit", "-q", "-m", "by hand")
	require.Error(t, err, "a plain commit is blocked by the hook")
	f.gitIn(ws.Dir(), "reset", "-q")

	res, err := ws.Commit(f.ctx, State{Head: ws.Base()}, StepCommit{Role: "do", StepIndex: 1, Iteration: 1})
	require.NoError(t, err)
	assert.True(t, res.Changed)
	assert.Equal(t, "work", f.show(res.Commit, "a.txt"))
}

func TestStateAndChanges(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(f *fixture, dir string)
		want   []string // "HEAD" stands for the moved-HEAD entry
	}{
		{"untouched", func(*fixture, string) {}, nil},
		{"modified", func(f *fixture, dir string) { writeFile(f.t, dir, "keep.txt", "changed\n") }, []string{"keep.txt"}},
		{"untracked in a new directory", func(f *fixture, dir string) { writeFile(f.t, dir, "a/b/new file.txt", "x\n") }, []string{"a/b/new file.txt"}},
		{"deleted", func(f *fixture, dir string) { require.NoError(f.t, os.Remove(filepath.Join(dir, "gone.txt"))) }, []string{"gone.txt"}},
		{"staged", func(f *fixture, dir string) {
			writeFile(f.t, dir, "s.txt", "x\n")
			f.gitIn(dir, "add", "s.txt")
		}, []string{"s.txt"}},
		// Regression: with -z the source of a rename is a separate field without a status
		// prefix; it used to be reported with its first three bytes cut off ("e.txt").
		{"staged rename", func(f *fixture, dir string) { f.gitIn(dir, "mv", "keep.txt", "kept.txt") }, []string{"kept.txt", "keep.txt"}},
		{"commit moved HEAD", func(f *fixture, dir string) { f.gitIn(dir, "commit", "-q", "--allow-empty", "-m", "agent") }, []string{"HEAD"}},
		{"commit and dirty", func(f *fixture, dir string) {
			f.gitIn(dir, "commit", "-q", "--allow-empty", "-m", "agent")
			writeFile(f.t, dir, "x.txt", "x\n")
		}, []string{"HEAD", "x.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ws := wsFixture(t)
			since := f.state(ws)
			assert.Equal(t, ws.Base(), since.Head)
			assert.Len(t, since.Status, 64)

			tc.mutate(f, ws.Dir())

			changes, err := ws.Changes(f.ctx, since)
			require.NoError(t, err)
			now := f.state(ws)
			if tc.want == nil {
				assert.Empty(t, changes)
				assert.Equal(t, since, now)
				return
			}
			assert.NotEqual(t, since, now)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = w
				if w == "HEAD" {
					want[i] = "HEAD moved from " + since.Head[:10] + " to " + now.Head[:10]
				}
			}
			assert.ElementsMatch(t, want, changes)
		})
	}
}

func TestDiscardRestoresState(t *testing.T) {
	f, ws := wsFixture(t)
	writeFile(t, ws.Dir(), ".gitignore", "*.log\n")
	// An earlier step's commit, git-norma's.
	require.NoError(t, ws.git.Run(f.ctx, "add", ".gitignore"))
	require.NoError(t, ws.git.Run(f.ctx, "commit", "-q", "-m", "ignore logs"))
	require.NoError(t, ws.syncAgentView())
	since := f.state(ws)

	writeFile(t, ws.Dir(), "keep.txt", "changed\n")
	require.NoError(t, os.Remove(filepath.Join(ws.Dir(), "gone.txt")))
	writeFile(t, ws.Dir(), "dir/untracked.txt", "x\n")
	writeFile(t, ws.Dir(), "staged.txt", "x\n")
	f.gitIn(ws.Dir(), "add", "staged.txt")
	f.gitIn(ws.Dir(), "commit", "-q", "-m", "read-only agent committed")
	writeFile(t, ws.Dir(), "README.md", "# dirty\n")

	require.NoError(t, ws.Discard(f.ctx, since))

	assert.Equal(t, since, f.state(ws))
	changes, err := ws.Changes(f.ctx, since)
	require.NoError(t, err)
	assert.Empty(t, changes)
	assert.Equal(t, since.Head, f.rev("refs/heads/norma/task/T-1"))
	assert.Equal(t, "keep\n", readFile(t, ws.Dir(), "keep.txt"))
	assert.Equal(t, "to be deleted\n", readFile(t, ws.Dir(), "gone.txt"))
	assert.Equal(t, "# test\n", readFile(t, ws.Dir(), "README.md"))
	assert.NoFileExists(t, filepath.Join(ws.Dir(), "dir", "untracked.txt"))
	assert.NoDirExists(t, filepath.Join(ws.Dir(), "dir"))
	assert.NoFileExists(t, filepath.Join(ws.Dir(), "staged.txt"))
}

// Regression: a read-only agent that switched branches used to make Discard reset the branch
// it switched to (possibly another task's) and leave the workspace off its task branch.
func TestDiscardAfterBranchSwitch(t *testing.T) {
	tests := []struct {
		name  string
		move  func(f *fixture, dir string)
		rogue string
	}{
		{"new branch", func(f *fixture, dir string) { f.gitIn(dir, "checkout", "-q", "-b", "rogue") }, "rogue"},
		{"existing branch", func(f *fixture, dir string) {
			f.gitIn(dir, "checkout", "-q", "norma/task/other")
		}, "norma/task/other"},
		{"detached", func(f *fixture, dir string) { f.gitIn(dir, "checkout", "-q", "--detach") }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ws := wsFixture(t)
			other := f.commitOn("norma/task/other", "main", map[string]string{"other.txt": "other task\n"}, "other task")
			since := f.state(ws)

			tc.move(f, ws.Dir())
			writeFile(t, ws.Dir(), "agent.txt", "x\n")
			f.gitIn(ws.Dir(), "add", "-A")
			f.gitIn(ws.Dir(), "commit", "-q", "-m", "agent on the wrong branch")
			agentTip := f.gitIn(ws.Dir(), "rev-parse", "HEAD")
			writeFile(t, ws.Dir(), "dirty.txt", "x\n")

			require.NoError(t, ws.Discard(f.ctx, since))

			assert.Equal(t, "refs/heads/norma/task/T-1", f.gitIn(ws.Dir(), "symbolic-ref", "HEAD"), "back on the task branch")
			assert.Equal(t, since, f.state(ws))
			assert.Equal(t, since.Head, f.rev("refs/heads/norma/task/T-1"))
			assert.NoFileExists(t, filepath.Join(ws.Dir(), "agent.txt"))
			assert.NoFileExists(t, filepath.Join(ws.Dir(), "dirty.txt"))
			if tc.rogue != "" {
				assert.Equal(t, agentTip, f.rev("refs/heads/"+tc.rogue), "the other branch is not reset")
			}
			if tc.rogue != "norma/task/other" {
				assert.Equal(t, other, f.rev("refs/heads/norma/task/other"))
			}
		})
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		name, in string
		width    int
		want     string
	}{
		{"empty", "", 72, ""},
		{"short", "one two", 72, "one two"},
		{"exact", "aaaa bbbb", 9, "aaaa bbbb"},
		{"breaks", "aaaa bbbb cccc", 9, "aaaa bbbb\ncccc"},
		{"collapses whitespace and newlines", "a\n\n  b\tc", 72, "a b c"},
		{"long word kept whole", "x " + strings.Repeat("y", 20) + " z", 10, "x\n" + strings.Repeat("y", 20) + "\nz"},
		{"runes not bytes", "ééé ééé", 7, "ééé ééé"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, wrap(tc.in, tc.width))
		})
	}
}

// The state a settle read stands in for the next State exactly once; anything that changes
// the worktree on the orchestrator's side (Discard, Commit) forgets it.
func TestSettledStateIsUsedOnce(t *testing.T) {
	f, ws := wsFixture(t)
	since := f.state(ws)
	changes, err := ws.Changes(f.ctx, since)
	require.NoError(t, err)
	require.Empty(t, changes)

	writeFile(t, ws.Dir(), "late.txt", "written after the settle\n")
	assert.Equal(t, since, f.state(ws), "the settled state, without reading again")
	assert.NotEqual(t, since, f.state(ws), "then read afresh")

	_, err = ws.Changes(f.ctx, since)
	require.NoError(t, err)
	require.NoError(t, ws.Discard(f.ctx, since))
	assert.Equal(t, since, f.state(ws), "after a discard the state is read again, and is clean")
	writeFile(t, ws.Dir(), "late.txt", "again\n")
	_, err = ws.Changes(f.ctx, since)
	require.NoError(t, err)
	_, err = ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1})
	require.NoError(t, err)
	assert.NotEqual(t, since.Head, f.state(ws).Head, "after a commit the new HEAD is read")
}

// Reading the state never writes the worktree's index, even when git status would refresh it
// (a tracked file's times changed, its content did not).
func TestStateLeavesTheIndexAlone(t *testing.T) {
	f, ws := wsFixture(t)
	index := f.gitIn(ws.Dir(), "rev-parse", "--path-format=absolute", "--git-path", "index")
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(ws.Dir(), "keep.txt"), later, later))
	before, err := os.Stat(index)
	require.NoError(t, err)
	since := f.state(ws)
	changes, err := ws.Changes(f.ctx, since)
	require.NoError(t, err)
	assert.Empty(t, changes, "new file times alone are no change")
	after, err := os.Stat(index)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after) && before.ModTime().Equal(after.ModTime()), "the index was rewritten")

	// git status itself would have rewritten it: the test can tell.
	f.gitIn(ws.Dir(), "status", "--porcelain")
	after, err = os.Stat(index)
	require.NoError(t, err)
	assert.False(t, os.SameFile(before, after), "plain git status rewrites the index here")
}
