package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckTree: the check worktree holds exactly the asked commit's tracked files; what the
// checks left untracked goes, what they cached under ignored paths stays; only created once.
func TestCheckTree(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile(".gitignore", "cache/\n")
	f.repo.WriteFile("app.conf", "port=80\n")
	c1 := f.repo.Commit("one")
	f.repo.WriteFile("app.conf", "port=81\n")
	c2 := f.repo.Commit("two")
	path := filepath.Join(t.TempDir(), "checks", "t1", "worktree")
	o := CheckTreeOptions{TaskID: "t1", Path: path, Commit: c1}

	ct, err := f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created)
	assert.False(t, ct.Leftovers)
	assert.Equal(t, path, ct.Dir)
	assert.Equal(t, f.rev(c1+"^{tree}"), ct.Tree)
	assert.FileExists(t, filepath.Join(path, "app.conf"))

	// what the check commands leave behind
	require.NoError(t, os.MkdirAll(filepath.Join(path, "cache"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "cache", "deps"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(path, "junk.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(path, "app.conf"), []byte("edited\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(path, "nested", "sub"), 0o755))
	f.gitIn(filepath.Join(path, "nested"), "init", "-q")

	o.Commit = c2
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.False(t, ct.Created)
	assert.Equal(t, f.rev(c2+"^{tree}"), ct.Tree)
	data, err := os.ReadFile(filepath.Join(path, "app.conf"))
	require.NoError(t, err)
	assert.Equal(t, "port=81\n", string(data))
	assert.NoFileExists(t, filepath.Join(path, "junk.txt"))
	assert.NoDirExists(t, filepath.Join(path, "nested"))
	assert.FileExists(t, filepath.Join(path, "cache", "deps"), "ignored caches survive")
	assert.True(t, ct.Leftovers, "and are said to be there")

	assert.Equal(t, c2, f.gitIn(path, "rev-parse", "HEAD"))
	assert.Empty(t, f.gitIn(path, "status", "--porcelain"))

	// a submodule's directory, which git status and clean never look into, is emptied
	f.repo.Must("update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",sub")
	f.repo.Must("commit", "-q", "-m", "a gitlink") // not Commit: its add -A would drop the gitlink, whose directory is missing
	c3 := f.rev("HEAD")
	o.Commit = c3
	_, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(path, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "sub", "app.conf"), []byte("planted"), 0o644))
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.False(t, ct.Created, "moved, not made again")
	assert.NoFileExists(t, filepath.Join(path, "sub", "app.conf"))
	o.Commit = c2
	_, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)

	// asked for fresh: made again, without them
	o.Fresh = true
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created)
	assert.False(t, ct.Leftovers)
	assert.NoDirExists(t, filepath.Join(path, "cache"))
	o.Fresh = false
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.False(t, ct.Leftovers, "a move with no ignored file there says so")

	// a packed commit: the tree comes from git
	f.git("gc", "-q")
	o.Commit = c1
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.Equal(t, f.rev(c1+"^{tree}"), ct.Tree)

	// a check made its .git a repository of its own: made again
	require.NoError(t, os.Remove(filepath.Join(path, ".git")))
	f.gitIn(path, "init", "-q")
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created)
	st, err := os.Lstat(filepath.Join(path, ".git"))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "git-norma's link again")
	assert.Equal(t, c1, f.gitIn(path, "rev-parse", "HEAD"))

	// a git killed in it left its index locked: made again
	admin, err := f.m.AdminDir(f.ctx, path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(admin, "index.lock"), nil, 0o644))
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created)
	assert.Equal(t, c1, f.gitIn(path, "rev-parse", "HEAD"))

	// deleted behind git's back: made again
	require.NoError(t, os.RemoveAll(path))
	ct, err = f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created)
	assert.FileExists(t, filepath.Join(path, "app.conf"))

	require.NoError(t, f.m.RemoveCheckTree(f.ctx, path))
	assert.NoDirExists(t, path)
	list, err := f.m.List(f.ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1, "only the main worktree is left")
}

// TestSetUp: .worktreeinclude copies only ignored files from the main checkout; the setup
// commands run in the new worktree; a failing one is an error naming it, and a check worktree
// whose setup failed is not left half made.
func TestSetUp(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile(".gitignore", ".env\nsecrets/\n")
	f.repo.WriteFile(IncludeFile, ".env\nsecrets/\nnotes.txt\n")
	head := f.repo.Commit("setup")
	f.repo.WriteFile(".env", "PORT=80\n")
	f.repo.WriteFile("secrets/key", "k\n")
	f.repo.WriteFile("notes.txt", "untracked but not ignored\n")
	f.repo.WriteFile(".norma/runs/x", "git-norma state\n")
	require.NoError(t, os.Chmod(filepath.Join(f.repo.Dir, ".env"), 0o600))

	path := filepath.Join(t.TempDir(), "checks", "t1", "worktree")
	setup := Setup{Root: f.repo.Dir, Commands: [][]string{{"sh", "-c", "cat .env > installed"}}}
	_, err := f.m.CheckTree(f.ctx, CheckTreeOptions{TaskID: "t1", Path: path, Commit: head, Setup: setup})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(path, "installed"))
	require.NoError(t, err)
	assert.Equal(t, "PORT=80\n", string(data), "the setup ran after the include copy, in the worktree")
	st, err := os.Stat(filepath.Join(path, ".env"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.FileExists(t, filepath.Join(path, "secrets", "key"))
	assert.NoFileExists(t, filepath.Join(path, "notes.txt"), "only ignored files are copied")
	assert.NoDirExists(t, filepath.Join(path, ".norma"))

	path2 := filepath.Join(t.TempDir(), "checks", "t2", "worktree")
	_, err = f.m.CheckTree(f.ctx, CheckTreeOptions{TaskID: "t2", Path: path2, Commit: head,
		Setup: Setup{Commands: [][]string{{"sh", "-c", "echo no network; exit 3"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `worktree.setup command ["sh" "-c" "echo no network; exit 3"] failed`)
	assert.Contains(t, err.Error(), "no network")
	assert.NoDirExists(t, path2, "a failed setup leaves no half-made check worktree")
}

// A scratch worktree left by a killed process is cleared, so it can be added again; so is a
// bare directory at its place, and nothing is done where nothing is left.
func TestClearScratch(t *testing.T) {
	f := newFixture(t)
	head := f.rev("HEAD")
	path := filepath.Join(t.TempDir(), "recheck", "workspace")

	removed, err := f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.False(t, removed)

	require.NoError(t, f.m.AddScratch(f.ctx, path, head))
	require.NoError(t, os.WriteFile(filepath.Join(path, "built.o"), []byte("x"), 0o600))
	require.Error(t, f.m.AddScratch(f.ctx, path, head), "git refuses a path that exists")
	removed, err = f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.True(t, removed)
	assert.NotContains(t, f.git("worktree", "list", "--porcelain"), path)
	require.NoError(t, f.m.AddScratch(f.ctx, path, head), "added again")
	require.NoError(t, f.m.RemoveScratch(f.ctx, path))

	require.NoError(t, os.MkdirAll(filepath.Join(path, "sub"), 0o700))
	removed, err = f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.True(t, removed)
	require.NoError(t, f.m.AddScratch(f.ctx, path, head))

	// its directory gone, but git still knows it
	require.NoError(t, os.RemoveAll(path))
	require.Error(t, f.m.AddScratch(f.ctx, path, head), "git refuses a path it knows")
	removed, err = f.m.ClearScratch(f.ctx, path)
	require.NoError(t, err)
	assert.True(t, removed)
	require.NoError(t, f.m.AddScratch(f.ctx, path, head))
}

// TestCheckTreeRemakesWhatItCannotRead: a check that takes a directory's modes away (Landlock
// does not govern chmod) hides it from git status, yet what is in it can still be opened by
// name by the next check. The worktree is then made again, not moved. Root reads everything:
// as root the test runs a copy of itself as nobody.
func TestCheckTreeRemakesWhatItCannotRead(t *testing.T) {
	if os.Geteuid() == 0 {
		runAsNobody(t, "^TestCheckTreeRemakesWhatItCannotRead$")
		return
	}
	f := newFixture(t)
	f.repo.WriteFile(".gitignore", "build/\n")
	c1 := f.repo.Commit("one")
	f.repo.WriteFile("b.txt", "b\n")
	c2 := f.repo.Commit("two")
	path := filepath.Join(t.TempDir(), "checks", "t1", "worktree")
	o := CheckTreeOptions{TaskID: "t1", Path: path, Commit: c1}
	_, err := f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(path, "build"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(path, "build", "app.conf"), []byte("port=80\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(path, "build"), 0o300))

	o.Commit = c2
	ct, err := f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created, "made again")
	assert.NoDirExists(t, filepath.Join(path, "build"))
	assert.FileExists(t, filepath.Join(path, "b.txt"))
}

// runAsNobody runs the tests run names in a copy of this test binary as the user nobody, and
// fails unless they pass.
func runAsNobody(t *testing.T, run string) {
	t.Helper()
	// Not t.TempDir: its parent is the test's alone (0700).
	dir, err := os.MkdirTemp("", "norma-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	exe := filepath.Join(dir, "worktree.test")
	data, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(exe, data, 0o755))
	cmd := exec.Command(exe, "-test.run", run, "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS")
}

// A check that put a symbolic link in the place of a gitlink's parent directory (a/ → a
// directory of yours, for the gitlink a/src) does not get that directory emptied: the check
// worktree is made again instead. (A red-team finding: a confined check had git-norma empty
// the main checkout's src/ and a directory of $HOME.)
func TestCheckTreeNeverEmptiesThroughALink(t *testing.T) {
	f := newFixture(t)
	sub := f.repo.Commit("a commit a gitlink names")
	f.repo.Must("update-index", "--add", "--cacheinfo", "160000,"+sub+",a/src")
	f.repo.Must("commit", "-q", "-m", "with a gitlink") // not Commit: its add -A would drop it
	c1 := f.repo.Must("rev-parse", "HEAD")
	f.repo.Must("commit", "-q", "--allow-empty", "-m", "the same tree") // an iteration that changed nothing
	c2 := f.repo.Must("rev-parse", "HEAD")
	victim := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(victim, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(victim, "src", "wip.go"), []byte("yours\n"), 0o644))

	path := filepath.Join(t.TempDir(), "checks", "t1", "worktree")
	o := CheckTreeOptions{TaskID: "t1", Path: path, Commit: c1}
	_, err := f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(path, "a")))
	require.NoError(t, os.Symlink(victim, filepath.Join(path, "a")))

	o.Commit = c2
	ct, err := f.m.CheckTree(f.ctx, o)
	require.NoError(t, err)
	assert.True(t, ct.Created, "made again")
	assert.FileExists(t, filepath.Join(victim, "src", "wip.go"), "nothing of yours is emptied")
	st, err := os.Lstat(filepath.Join(path, "a"))
	require.NoError(t, err)
	assert.True(t, st.IsDir(), "the gitlink's parent is a directory again")
}

// A checkout's changes are the tracked files whose bytes differ from the commit's, or that
// went or came, and HEAD moved off the commit: a file committed with line endings
// .gitattributes now converts, which git reads as changed whatever its bytes, is not one.
// Restore puts them back.
func TestCheckoutChanges(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile("crlf.txt", "a\r\nb\r\n")
	f.repo.WriteFile("keep.txt", "keep\n")
	f.repo.Commit("crlf")
	f.repo.WriteFile(".gitattributes", "crlf.txt text eol=lf\n")
	f.repo.Must("add", ".gitattributes") // only: add -A could renormalise crlf.txt
	f.repo.Must("commit", "-q", "-m", "attributes")
	path, head, co := f.scratchCheckout()
	later := time.Now().Add(time.Hour) // touched: git reads it again
	require.NoError(t, os.Chtimes(filepath.Join(path, "crlf.txt"), later, later))
	require.Contains(t, f.gitIn(path, "diff", "--name-only", head), "crlf.txt", "git reads it as changed")

	changes, err := co.Changes(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, changes)

	require.NoError(t, os.WriteFile(filepath.Join(path, "keep.txt"), []byte("changed\n"), 0o644))
	require.NoError(t, os.Remove(filepath.Join(path, ".gitattributes")))
	f.gitIn(path, "add", "-N", ".")
	require.NoError(t, os.WriteFile(filepath.Join(path, "new.txt"), []byte("new\n"), 0o644))
	f.gitIn(path, "add", "new.txt")
	changes, err = co.Changes(f.ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{".gitattributes", "keep.txt", "new.txt"}, changes)

	f.restored(co)
	data, err := os.ReadFile(filepath.Join(path, "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(data))
	assert.NoFileExists(t, filepath.Join(path, "new.txt"))

	// a check that commits there moves HEAD off the commit: put back too
	f.gitIn(path, "-c", "user.name=c", "-c", "user.email=c@example.com", "commit", "-q", "--allow-empty", "-m", "a check's")
	changes, err = co.Changes(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"HEAD"}, changes)
	require.NoError(t, co.Restore(f.ctx))
	assert.Equal(t, head, f.gitIn(path, "rev-parse", "HEAD"))
}

// A file made executable (or no longer) is a change, though its bytes are the commit's: the
// next check would run (or fail to run) a script that lands as it was committed.
func TestCheckoutChangesSeesAModeChange(t *testing.T) {
	f := newFixture(t)
	f.repo.WriteFile("test.sh", "exit 0\n")
	f.repo.WriteFile("tool.sh", "exit 0\n")
	f.repo.Commit("scripts")
	f.repo.Must("update-index", "--chmod=+x", "tool.sh")
	f.repo.Must("commit", "-q", "-m", "tool is executable")
	path, _, co := f.scratchCheckout()
	require.NoError(t, os.Chmod(filepath.Join(path, "test.sh"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(path, "tool.sh"), 0o644))

	changes, err := co.Changes(f.ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"test.sh", "tool.sh"}, changes)

	f.restored(co)
	st, err := os.Stat(filepath.Join(path, "test.sh"))
	require.NoError(t, err)
	assert.Zero(t, st.Mode()&0o111, "not executable again")
}

// scratchCheckout checks HEAD out in a scratch worktree: its path, the commit, its Checkout.
func (f *fixture) scratchCheckout() (path, head string, co Checkout) {
	f.t.Helper()
	head = f.rev("HEAD")
	path = filepath.Join(f.t.TempDir(), "scratch")
	require.NoError(f.t, f.m.AddScratch(f.ctx, path, head))
	return path, head, f.m.Checkout(path, head)
}

// restored puts co back and sees nothing changed after.
func (f *fixture) restored(co Checkout) {
	f.t.Helper()
	require.NoError(f.t, co.Restore(f.ctx))
	changes, err := co.Changes(f.ctx)
	require.NoError(f.t, err)
	assert.Empty(f.t, changes)
}
