package guard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// gitRepo is a new repository on branch main, away from your git configuration, and a function
// running git in it.
func gitRepo(t testing.TB) (string, func(args ...string)) {
	t.Helper()
	gittest.Isolate(t)
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	run("init", "-q", "-b", "main")
	return dir, run
}

// configRepo is a repository with a remote, and a function running git in it.
func configRepo(t *testing.T) (string, func(args ...string)) {
	t.Helper()
	dir, run := gitRepo(t)
	run("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "initial")
	run("remote", "add", "origin", "https://example.com/x.git")
	return dir, run
}

func readEntries(t *testing.T, path string) []git.ConfigEntry {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	entries, err := git.Runner{}.ParseConfig(context.Background(), data)
	require.NoError(t, err)
	return entries
}

// Every key of the shared config counts but those git writes itself for everyday commands:
// a branch's tracking (to a configured remote) and maintenance.
func TestConfigChangesCountsEveryKeyButEverydayOnes(t *testing.T) {
	dir, run := configRepo(t)
	config := filepath.Join(dir, ".git", "config")
	before := readEntries(t, config)

	for _, everyday := range [][]string{
		{"branch", "topic"}, {"config", "branch.topic.remote", "origin"}, {"config", "branch.topic.merge", "refs/heads/main"},
		{"branch", "-m", "topic", "renamed"}, {"branch", "-D", "renamed"},
		{"config", "branch.main.remote", "origin"}, {"config", "branch.main.pushRemote", "."},
		{"config", "maintenance.auto", "false"},
	} {
		run(everyday...)
		assert.Empty(t, configChanges(before, readEntries(t, config)), "git %v", everyday)
	}
	for _, counted := range []struct {
		args []string
		key  string
	}{
		{[]string{"config", "core.bare", "true"}, "core.bare"},
		{[]string{"config", "remote.origin.pushurl", "https://attacker.example.com/x.git"}, "remote.origin.pushurl"},
		{[]string{"config", "remote.origin.url", "https://attacker.example.com/x.git"}, "remote.origin.url"},
		{[]string{"config", "alias.st", "!echo gotcha"}, "alias.st"},
		{[]string{"config", "core.hooksPath", "/tmp/elsewhere"}, "core.hookspath"},
		{[]string{"config", "user.email", "someone@example.com"}, "user.email"},
		{[]string{"config", "include.path", "/tmp/more.cfg"}, "include.path"},
		{[]string{"config", "filter.lfs.smudge", "/tmp/smudge %f"}, "filter.lfs.smudge"},
		{[]string{"config", "branch.main.pushRemote", "https://attacker.example.com/x.git"}, "branch.main.pushremote"},
		{[]string{"config", "--add", "remote.origin.fetch", "+refs/*:refs/*"}, "remote.origin.fetch"},
	} {
		now := readEntries(t, config)
		run(counted.args...)
		assert.Equal(t, []string{counted.key}, configChanges(now, readEntries(t, config)), "git %v", counted.args)
	}
	run("config", "--unset", "core.bare")
	assert.Contains(t, configChanges(readEntries(t, config), nil), "remote.origin.url", "a removed file's keys count")
}

// restoreConfig sets back the keys given, and only those: a branch the user made meanwhile
// keeps its tracking.
func TestRestoreConfigSetsBackOnlyTheGivenKeys(t *testing.T) {
	dir, run := configRepo(t)
	run("config", "--add", "remote.origin.fetch", "+refs/tags/*:refs/tags/*")
	run("config", "core.editor", `vi "-n" # the user's`)
	config := filepath.Join(dir, ".git", "config")
	before := readEntries(t, config)

	run("config", "core.bare", "true")
	run("config", "--unset-all", "remote.origin.fetch")
	run("config", "core.editor", "/tmp/evil")
	run("config", "branch.topic.remote", "origin")
	changed := configChanges(before, readEntries(t, config))
	require.Equal(t, []string{"core.bare", "core.editor", "remote.origin.fetch"}, changed)

	require.NoError(t, restoreConfig(context.Background(), git.Runner{Dir: dir}, config, before, changed))
	after := readEntries(t, config)
	assert.Empty(t, configChanges(before, after))
	assert.Contains(t, after, git.ConfigEntry{Key: "branch.topic.remote", Value: "origin"})
	assert.Contains(t, after, git.ConfigEntry{Key: "core.editor", Value: `vi "-n" # the user's`})
}

// A config file removed, or one git can no longer read, is written back whole and reported;
// an unchanged one is not.
func TestConfigChangeRestoresARemovedOrBrokenFile(t *testing.T) {
	dir, _ := configRepo(t)
	config := filepath.Join(dir, ".git", "config")
	g := &Guard{Places: placesOf(dir)}
	ctx := context.Background()
	saved := saveFile(config)
	assert.Empty(t, g.configChange(ctx, saved))

	require.NoError(t, os.Remove(config))
	found := g.configChange(ctx, saved)
	assert.Contains(t, found, "remote.origin.url")
	assert.Contains(t, found, "(restored)")
	assert.True(t, saved.same(saveFile(config)), "the file is back as it was")

	require.NoError(t, os.WriteFile(config, append(slices.Clone(saved.data), "[core\n"...), 0o644))
	assert.Equal(t, ".git/config: no longer a config git reads (restored)", g.configChange(ctx, saved))
	assert.True(t, saved.same(saveFile(config)))
}

// A config replaced by a symbolic link is put back as the file it was: setting keys back
// through git config would write where the link points.
func TestConfigChangeReplacesALinkedConfig(t *testing.T) {
	dir, _ := configRepo(t)
	config := filepath.Join(dir, ".git", "config")
	g := &Guard{Places: placesOf(dir)}
	saved := saveFile(config)
	elsewhere := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(elsewhere, saved.data, 0o644))
	require.NoError(t, os.Remove(config))
	require.NoError(t, os.Symlink(elsewhere, config))

	assert.Equal(t, ".git/config: a symbolic link made, moved or removed (restored)", g.configChange(context.Background(), saved))
	st, err := os.Lstat(config)
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "a file again, not the link")
	assert.True(t, saved.same(saveFile(config)))
}

// A config that is a symbolic link (into the user's dotfiles) is read through it, and a key
// changed there is set back there; the link stays.
func TestConfigChangeReadsThroughALink(t *testing.T) {
	dir, run := configRepo(t)
	config := filepath.Join(dir, ".git", "config")
	dotfile := filepath.Join(t.TempDir(), "config")
	data, err := os.ReadFile(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dotfile, data, 0o644))
	require.NoError(t, os.Remove(config))
	require.NoError(t, os.Symlink(dotfile, config))
	g := &Guard{Places: placesOf(dir)}
	saved := saveFile(config)

	run("config", "core.bare", "true")
	assert.Equal(t, ".git/config: core.bare (set back)", g.configChange(context.Background(), saved))
	target, err := os.Readlink(config)
	require.NoError(t, err)
	assert.Equal(t, dotfile, target, "still the link")
	assert.Empty(t, configChanges(readEntries(t, dotfile), readEntries(t, config)))
	assert.NotContains(t, readEntries(t, config), git.ConfigEntry{Key: "core.bare", Value: "true"})
}

// A guarded file that is a link gets back its link and, through it, its content.
func TestRestoreRelinksAndRewritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	target, other, path := filepath.Join(dir, "target"), filepath.Join(dir, "other"), filepath.Join(dir, "exclude")
	require.NoError(t, os.WriteFile(target, []byte("build/\n"), 0o644))
	require.NoError(t, os.Symlink(target, path))
	saved := saveFile(path)
	assert.Equal(t, "build/\n", string(saved.data), "read through the link")

	require.NoError(t, os.WriteFile(target, []byte("secret.txt\n"), 0o644))
	require.False(t, saved.same(saveFile(path)))
	require.NoError(t, saved.restore())
	assert.True(t, saved.same(saveFile(path)))

	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(other, path))
	require.NoError(t, saved.restore())
	link, err := os.Readlink(path)
	require.NoError(t, err)
	assert.Equal(t, target, link)
}

// A config replaced by a directory or a pipe is put back whole — reading or writing a pipe
// would block git-norma for good — and one git config cannot write (a config.lock left in
// place) gets its whole text back instead of its keys.
func TestConfigChangeRestoresWhatGitConfigCannot(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, config string, run func(args ...string))
		want   string
	}{
		{"a directory", func(t *testing.T, config string, _ func(args ...string)) {
			require.NoError(t, os.Remove(config))
			require.NoError(t, os.MkdirAll(filepath.Join(config, "sub"), 0o755))
		}, ".git/config: no longer a config git reads (restored)"},
		{"a pipe", func(t *testing.T, config string, _ func(args ...string)) {
			require.NoError(t, os.Remove(config))
			require.NoError(t, syscall.Mkfifo(config, 0o644))
		}, ".git/config: no longer a config git reads (restored)"},
		{"a lock left in place", func(t *testing.T, config string, run func(args ...string)) {
			run("config", "core.hooksPath", "/tmp/evil-hooks")
			require.NoError(t, os.WriteFile(config+".lock", nil, 0o644))
		}, ".git/config: core.hookspath (restored)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, run := configRepo(t)
			config := filepath.Join(dir, ".git", "config")
			g := &Guard{Places: placesOf(dir)}
			saved := saveFile(config)
			c.tamper(t, config, run)
			done := make(chan string, 1)
			go func() { done <- g.configChange(context.Background(), saved) }()
			select {
			case found := <-done:
				assert.Equal(t, c.want, found)
			case <-time.After(10 * time.Second):
				t.Fatal("the guard hangs")
			}
			assert.True(t, saved.same(saveFile(config)), "the config is back as it was")
		})
	}
}

// A file too large to keep a copy of is not read (a sparse file of 40 GB would take all the
// memory): it counts as changed, and cannot be restored.
func TestSaveFileReadsNoHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exclude")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxSaved+1))
	require.NoError(t, f.Close())
	saved := saveFile(path)
	assert.True(t, saved.irregular)
	assert.Nil(t, saved.data)
	assert.Error(t, saved.restore())
}

// A config whose mode changed (made writable by others) gets its mode back.
func TestConfigChangeRestoresTheMode(t *testing.T) {
	dir, _ := configRepo(t)
	config := filepath.Join(dir, ".git", "config")
	g := &Guard{Places: placesOf(dir)}
	saved := saveFile(config)
	require.NoError(t, os.Chmod(config, 0o666))
	assert.Equal(t, ".git/config: mode -rw-rw-rw-, was "+saved.mode.String()+" (restored)", g.configChange(context.Background(), saved))
	assert.True(t, saved.same(saveFile(config)))
}

// placesOf are the places of the repository at dir, which has no .norma.
func placesOf(dir string) Places {
	return Places{Root: dir, GitDir: filepath.Join(dir, ".git"), NormaDir: filepath.Join(dir, ".norma"), Git: git.Runner{Dir: dir}}
}
