package gitnorma

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// The shared config's guard line changes with any setting but the everyday ones git rewrites
// the file for, a user's commands or a parallel run's.
func TestConfigProgramsLineFollowsOnlyPrograms(t *testing.T) {
	gittest.Isolate(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q", "-b", "main")
	git("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "initial")
	config := filepath.Join(dir, ".git", "config")
	before := configProgramsLine(config)

	for _, everyday := range [][]string{
		{"branch", "topic"}, {"branch", "-D", "topic"},
		{"remote", "add", "origin", "https://example.com/x.git"},
		{"config", "branch.main.remote", "origin"},
		{"config", "user.name", "Someone"},
	} {
		git(everyday...)
		assert.Equal(t, before, configProgramsLine(config), "git %v", everyday)
	}
	for _, program := range [][]string{
		{"config", "alias.st", "!echo gotcha"},
		{"config", "core.hooksPath", "/tmp/elsewhere"},
		{"config", "core.fsmonitor", "/tmp/watcher"},
		{"config", "filter.lfs.smudge", "/tmp/smudge %f"},
		{"config", "credential.https://example.com.helper", "/tmp/steal"},
		{"config", "include.path", "/tmp/more.cfg"},
		{"config", "remote.origin.uploadpack", "/tmp/up"},
		{"config", "extensions.worktreeConfig", "true"}, // then a config.worktree could say anything
		{"config", "diff.external", "/tmp/differ"},
		{"config", "interactive.diffFilter", "/tmp/filter"},
	} {
		git(program...)
		after := configProgramsLine(config)
		assert.NotEqual(t, before, after, "git %v", program)
		before = after
	}
}

func TestProgramSettingsReadsGitSyntax(t *testing.T) {
	text := "# a comment\n[core]\n\tbare = false\n\thooksPath = /x\n[Alias]\n\tst\n[filter \"lfs\"]\n\tsmudge = git-lfs smudge %f\n; another\n[user] name = U\n[pager] log = less\n" +
		"[branch \"main\"]\n\tremote = origin\n[remote \"origin\"]\n\turl = x\n\treceivepack = rp\n[core]\n\teditor = vi \\\n-n\n"
	assert.Equal(t, []string{"alias.st=", "core.editor=vi -n", "core.hookspath=/x", "filter.lfs.smudge=git-lfs smudge %f", "pager.log=less", "remote.origin.receivepack=rp"},
		programSettings([]byte(text)))
	require.Equal(t, "absent\t"+filepath.Join(os.TempDir(), "nope"), configProgramsLine(filepath.Join(os.TempDir(), "nope")))
}
