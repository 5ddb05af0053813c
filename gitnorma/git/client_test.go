package git_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// The typed questions answer from a real repository: refs resolved alone and together,
// branch and HEAD names, staged changes, and what a log query selects.
func TestClientReads(t *testing.T) {
	ctx := context.Background()
	r := gittest.NewRepo(t)
	first := r.Must("rev-parse", "HEAD")
	r.Must("commit", "-q", "--allow-empty", "-m", "second\n\nNorma-Task: t-1\nNorma-Run: r-1")
	second := r.Must("rev-parse", "HEAD")
	r.Must("branch", "side", first)

	got, err := r.Git.ResolveCommit(ctx, "refs/heads/main")
	require.NoError(t, err)
	assert.Equal(t, second, got)
	_, err = r.Git.Resolve(ctx, "refs/heads/missing")
	assert.Error(t, err)
	all, err := r.Git.ResolveAll(ctx, "refs/heads/main", "refs/heads/side")
	require.NoError(t, err)
	assert.Equal(t, []string{second, first}, all, "the ids alone, without the -- git echoes")
	assert.True(t, r.Git.HasCommit(ctx, first))
	assert.False(t, r.Git.HasCommit(ctx, strings.Repeat("1", 40)))

	branch, err := r.Git.CurrentBranch(ctx)
	require.NoError(t, err)
	assert.Equal(t, "main", branch)
	ref, err := r.Git.SymbolicRef(ctx, "HEAD")
	require.NoError(t, err)
	assert.Equal(t, "refs/heads/main", ref)
	assert.Error(t, r.Git.ValidBranchName(ctx, "no..dots"))

	staged, err := r.Git.StagedChanges(ctx)
	require.NoError(t, err)
	assert.False(t, staged)
	r.WriteFile("new.txt", "new\n")
	r.Must("add", "new.txt")
	staged, err = r.Git.StagedChanges(ctx)
	require.NoError(t, err)
	assert.True(t, staged)

	out, err := r.Git.Log(ctx, "%H %(trailers:key=Norma-Run,valueonly)", git.LogQuery{Revs: []string{"refs/heads/main"}, Grep: "Norma-Task: t-1", Fixed: true})
	require.NoError(t, err)
	assert.Equal(t, second+" r-1", strings.TrimSpace(out))
	out, err = r.Git.Log(ctx, "%H", git.LogQuery{Revs: []string{"refs/heads/main"}, Not: []string{first}})
	require.NoError(t, err)
	assert.Equal(t, second, out, "what the Not side reaches is left out")

	w, err := r.Git.Where(ctx)
	require.NoError(t, err)
	assert.True(t, w.InWorkTree)
	assert.False(t, w.Bare)
	assert.Equal(t, filepath.Join(w.TopLevel, ".git"), w.CommonDir)
}

// The ref changes are compare-and-swap: a ref that moved meanwhile is left where it is.
func TestClientRefChanges(t *testing.T) {
	ctx := context.Background()
	r := gittest.NewRepo(t)
	first := r.Must("rev-parse", "HEAD")
	second := r.Commit("second")

	require.NoError(t, r.Git.UpdateRef(ctx, "refs/heads/x", first, strings.Repeat("0", 40), "made by the test"))
	assert.Error(t, r.Git.UpdateRef(ctx, "refs/heads/x", second, second, ""), "x is not at second")
	require.NoError(t, r.Git.UpdateRef(ctx, "refs/heads/x", second, first, ""))
	assert.Error(t, r.Git.DeleteRef(ctx, "refs/heads/x", first), "x moved on")
	require.NoError(t, r.Git.DeleteRef(ctx, "refs/heads/x", second))
	_, err := r.Git.Resolve(ctx, "refs/heads/x")
	assert.Error(t, err)

	config := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(config, nil, 0o644))
	file := git.ConfigFile{Git: r.Git, Path: config}
	require.NoError(t, file.Add(ctx, "a.b", "1"))
	require.NoError(t, file.Add(ctx, "a.b", "2"))
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(data), "b = "), "both values added")
	require.NoError(t, file.Unset(ctx, "a.b"))
	data, err = os.ReadFile(config)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "b =")
}

// The history reads come back typed: each new commit with the trailers asked for (any case,
// the rest left out), newest first; a branch's reflog with how each move happened, whatever
// log.showSignature says.
func TestClientHistoryReads(t *testing.T) {
	ctx := context.Background()
	r := gittest.NewRepo(t)
	base := r.Must("rev-parse", "HEAD")
	r.Must("config", "log.showSignature", "true")
	r.Must("checkout", "-q", "-b", "norma/task/t-1")
	step := r.Commit("step\n\nnorma-task: t-1\nNorma-Role: do\nNorma-Run: r-1")
	plain := r.Commit("plain")

	commits, err := r.Git.TrailersOf(ctx, []string{"Norma-Task", "Norma-Role"}, []string{"HEAD"}, []string{base})
	require.NoError(t, err)
	assert.Equal(t, []git.CommitTrailers{
		{ID: plain},
		{ID: step, Trailers: []git.Trailer{{Key: "norma-task", Value: "t-1"}, {Key: "Norma-Role", Value: "do"}}},
	}, commits)

	entries, err := r.Git.Reflogs(ctx, "refs/heads/norma/task/*")
	require.NoError(t, err)
	require.Len(t, entries, 3)
	assert.Equal(t, git.ReflogEntry{Ref: "refs/heads/norma/task/t-1", ID: plain, Message: "commit: plain"}, entries[0])
	assert.Equal(t, step, entries[1].ID)
	assert.True(t, strings.HasPrefix(entries[2].Message, "branch: Created from"), entries[2].Message)
	entries, err = r.Git.Reflogs(ctx, "refs/heads/none/*")
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// The config reads name what is in force: the keys matching a pattern, and the files the
// settings come from, includes followed.
func TestClientConfigReads(t *testing.T) {
	ctx := context.Background()
	r := gittest.NewRepo(t)
	included := filepath.Join(t.TempDir(), "included")
	require.NoError(t, os.WriteFile(included, []byte("[filter \"x\"]\n\tclean = cat\n"), 0o644))
	r.Must("config", "include.path", included)

	out, err := r.Git.ConfigMatching(ctx, `^filter\..+\.clean$`)
	require.NoError(t, err)
	assert.Equal(t, "filter.x.clean cat", out)
	_, err = r.Git.ConfigMatching(ctx, `^nothing\.`)
	assert.Equal(t, 1, git.ExitCodeOf(err), "none matches")

	files, err := r.Git.ConfigFiles(ctx)
	require.NoError(t, err)
	assert.Contains(t, files, included)
	assert.Contains(t, files, ".git/config", "the repository's own, as git names it from inside")
}

// A config text reads as git reads it: sections, subsections old and new, keys without a
// value, comments, quotes, escapes and continued lines; a key set to nothing is not a key
// without a value; a text git cannot read is an error.
func TestParseConfigReadsAsGitDoes(t *testing.T) {
	text := "# a comment\n[core]\n\tbare = false\n\thooksPath = /x ; trailing\n[Alias]\n\tst\n\tempty =\n[filter \"lfs\"]\n\tsmudge = git-lfs smudge %f\n; another\n[user] name = U\n" +
		"[branch \"Main\"]\n\tremote = origin\n[remote.Origin]\n\turl = x\n[core]\n\teditor = vi \\\n-n\n\tpager = \"less -R\" # q\n\tquote = a\\\"b\\\\c\n"
	got, err := git.Runner{}.ParseConfig(context.Background(), []byte(text))
	require.NoError(t, err)
	assert.Equal(t, []git.ConfigEntry{
		{Key: "core.bare", Value: "false"}, {Key: "core.hookspath", Value: "/x"}, {Key: "alias.st", Value: "true"},
		{Key: "alias.empty", Value: ""}, {Key: "filter.lfs.smudge", Value: "git-lfs smudge %f"}, {Key: "user.name", Value: "U"},
		{Key: "branch.Main.remote", Value: "origin"}, {Key: "remote.origin.url", Value: "x"}, {Key: "core.editor", Value: "vi -n"},
		{Key: "core.pager", Value: "less -R"}, {Key: "core.quote", Value: `a"b\c`},
	}, got)

	_, err = git.Runner{}.ParseConfig(context.Background(), []byte("[core\n\tbare = true\n"))
	assert.Error(t, err)
}

// Confine runs exactly the commands that may run filter drivers on the work tree, wherever
// their name is among the arguments, and what it returns is the command's error, its exit
// status kept.
func TestRunnerConfinesTheFilteringCommands(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t).Dir
	var wrapped []string
	var failStart error
	r := git.Runner{Dir: dir, Confine: func(_ context.Context, cmd *exec.Cmd) error {
		wrapped = append(wrapped, strings.Join(cmd.Args[1:], " "))
		if failStart != nil {
			return failStart
		}
		return cmd.Run()
	}}
	require.NoError(t, r.Run(ctx, "status", "--porcelain"))
	_, err := r.Output(ctx, "rev-parse", "HEAD")
	require.NoError(t, err)
	require.NoError(t, r.Run(ctx, "-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "-m", "x"))
	require.NoError(t, r.Run(ctx, "diff", "--cached", "--quiet"))
	assert.Equal(t, []string{"status --porcelain", "-c maintenance.auto=false commit -q --allow-empty -m x"}, wrapped)

	failStart = errors.New("the launcher could not confine git")
	err = r.Run(ctx, "reset", "-q", "--bogus-option")
	require.ErrorIs(t, err, failStart)
	assert.Equal(t, -1, git.ExitCodeOf(err))

	failStart = exitStatus(3) // as the sandbox launcher says it
	assert.Equal(t, 3, git.ExitCodeOf(r.Run(ctx, "add", "nothing-here")))
}

// exitStatus is an error with an exit status, as sandbox.ExitError.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }
func (e exitStatus) ExitCode() int { return int(e) }
