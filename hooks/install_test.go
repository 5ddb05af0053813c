package hooks

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func TestInstallIntoEmptyDirAndTwice(t *testing.T) {
	dir := t.TempDir()
	actions, err := Install(dir, false)
	require.NoError(t, err)
	require.Len(t, actions, len(Names))
	for _, a := range actions {
		assert.Equal(t, "created", a.Result, a.Hook)
		st, err := os.Stat(a.Path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
		data, _ := os.ReadFile(a.Path)
		assert.True(t, strings.HasPrefix(string(data), "#!/bin/sh\n"+beginMarker))
		out, err := exec.Command("sh", "-n", a.Path).CombinedOutput()
		assert.NoError(t, err, "%s is valid sh: %s", a.Hook, out)
	}
	before := snapshot(t, dir)
	again, err := Install(dir, false)
	require.NoError(t, err)
	for _, a := range again {
		assert.Equal(t, "unchanged", a.Result)
	}
	assert.Equal(t, before, snapshot(t, dir), "a second install changes nothing")
	assert.Equal(t, map[string]string{"pre-commit": "installed", "post-commit": "installed", "pre-merge-commit": "installed", "pre-push": "installed"}, Status(dir))
}

// An existing shell hook keeps every byte; our block goes right after its shebang, so both run,
// git-norma's first. Uninstall gives back the exact bytes and mode.
func TestChainExistingShellHookAndUninstall(t *testing.T) {
	dir := t.TempDir()
	orig := []byte("#!/usr/bin/env bash\n# the team's hook\necho \"team hook: $1\" >> \"$LOG\"\n")
	path := filepath.Join(dir, "post-commit")
	require.NoError(t, os.WriteFile(path, orig, 0o750))
	require.NoError(t, os.Chmod(path, 0o750))

	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "chained", actions[1].Result)
	data, _ := os.ReadFile(path)
	assert.True(t, strings.HasPrefix(string(data), "#!/usr/bin/env bash\n"+beginMarker))
	assert.True(t, strings.HasSuffix(string(data), string(orig[len("#!/usr/bin/env bash\n"):])))

	// both run: a git-norma stub on PATH logs its call, then the team's line runs
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\necho \"norma: $*\" >> \"$LOG\"\n"), 0o755))
	cmd := exec.Command(path, "arg1")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "LOG="+log, GuardVar+"=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	got, _ := os.ReadFile(log)
	assert.Equal(t, "norma: hook post-commit arg1\nteam hook: arg1\n", string(got))

	// the guard skips git-norma, the team's hook still runs
	require.NoError(t, os.Remove(log))
	cmd = exec.Command(path, "arg1")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "LOG="+log, GuardEnv)
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	got, _ = os.ReadFile(log)
	assert.Equal(t, "team hook: arg1\n", string(got))

	_, err = Uninstall(dir)
	require.NoError(t, err)
	after, _ := os.ReadFile(path)
	assert.Equal(t, orig, after)
	st, _ := os.Stat(path)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
	for _, n := range []string{"pre-commit", "pre-merge-commit", "pre-push"} {
		assert.NoFileExists(t, filepath.Join(dir, n), "a file that only held our block is removed")
	}
}

// pre-push data on stdin reaches both git-norma and the chained hook.
func TestPrePushStdinReachesBoth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pre-push")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\nwhile read a b c d; do echo \"team saw $c\" >> \"$LOG\"; done\n"), 0o755))
	_, err := Install(dir, false)
	require.NoError(t, err)
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\nwhile read a b c d; do echo \"norma saw $c\" >> \"$LOG\"; done\n"), 0o755))
	cmd := exec.Command(path, "origin", "url")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "LOG="+log, GuardVar+"=")
	cmd.Stdin = strings.NewReader("refs/heads/main 1111 refs/heads/main 0000\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	got, _ := os.ReadFile(log)
	assert.Equal(t, "norma saw refs/heads/main\nteam saw refs/heads/main\n", string(got))

	// a failing git-norma stops the push (a gating hook)
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	cmd = exec.Command(path, "origin", "url")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "LOG="+log, GuardVar+"=")
	cmd.Stdin = strings.NewReader("")
	assert.Error(t, cmd.Run())

	// a missing one does not: one line says so, and the chained hook still gets stdin
	require.NoError(t, os.Remove(log))
	cmd = exec.Command(path, "origin", "url")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir()+":/usr/bin:/bin", "LOG="+log, GuardVar+"=")
	cmd.Stdin = strings.NewReader("refs/heads/main 1111 refs/heads/main 0000\n")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "git-norma is not on PATH: this push was not checked for unverified task work (put it on PATH, or remove its hooks: git norma hooks uninstall)\n", string(out))
	got, _ = os.ReadFile(log)
	assert.Equal(t, "team saw refs/heads/main\n", string(got))
}

// Without git-norma on PATH the hooks never stop git: a commit goes through without a word,
// a commit on a task branch, a merge and a push each with one line on stderr.
func TestMissingGitNormaNeverStopsGit(t *testing.T) {
	repo := gittest.NewRepo(t)
	dir, err := repo.Git.Output(context.Background(), "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	require.NoError(t, err)
	_, err = Install(dir, false)
	require.NoError(t, err)
	gitBin, err := exec.LookPath("git")
	require.NoError(t, err)
	t.Setenv("PATH", filepath.Dir(gitBin)+":/usr/bin:/bin")
	if _, err := exec.LookPath("git-norma"); err == nil {
		t.Skip("git-norma is installed next to git")
	}
	remote := t.TempDir()
	repo.Must("init", "-q", "--bare", remote)
	run := repo.Stderr
	warning := func(what string) string {
		return "git-norma is not on PATH: " + what + " (put it on PATH, or remove its hooks: git norma hooks uninstall)\n"
	}
	assert.Empty(t, run("commit", "-q", "--allow-empty", "-m", "mine"))
	run("switch", "-q", "-c", "norma/task/x-1")
	assert.Equal(t, warning("this commit on a task branch was not checked"), run("commit", "-q", "--allow-empty", "-m", "task work"))
	run("switch", "-q", "main")
	assert.Equal(t, warning("this merge was not checked for unverified task work"), run("merge", "-q", "--no-ff", "-m", "merge", "norma/task/x-1"))
	assert.Equal(t, warning("this push was not checked for unverified task work"), run("push", "-q", remote, "main"))
}

// A hook that is not a shell script is left alone unless --force, which moves it aside and
// chains it; uninstall puts it back.
func TestNonShellHookSkippedOrForced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "post-commit")
	orig := []byte("#!/usr/bin/env python3\nprint('hi')\n")
	require.NoError(t, os.WriteFile(path, orig, 0o755))
	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "skipped", actions[1].Result)
	assert.Contains(t, actions[1].Detail, "--manual")
	data, _ := os.ReadFile(path)
	assert.Equal(t, orig, data)

	actions, err = Install(dir, true)
	require.NoError(t, err)
	assert.Equal(t, "chained", actions[1].Result)
	aside, _ := os.ReadFile(path + chainedSuffix)
	assert.Equal(t, orig, aside)
	shim, _ := os.ReadFile(path)
	assert.Contains(t, string(shim), `exec "$(dirname "$0")/post-commit.norma-chained" "$@"`)

	_, err = Uninstall(dir)
	require.NoError(t, err)
	data, _ = os.ReadFile(path)
	assert.Equal(t, orig, data)
	assert.NoFileExists(t, path+chainedSuffix)
}

// An older version of our block is replaced in place; the rest of the file is untouched.
func TestUpgradeOlderBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "post-commit")
	old := "#!/bin/sh\n" + beginMarker + " v0 (old)\ngit-norma hook post-commit\n" + endMarker + "\necho mine\n"
	require.NoError(t, os.WriteFile(path, []byte(old), 0o700))
	assert.Equal(t, "outdated", Status(dir)["post-commit"])
	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "upgraded", actions[1].Result)
	data, _ := os.ReadFile(path)
	assert.Equal(t, "#!/bin/sh\n"+Block("post-commit")+"echo mine\n", string(data))
	st, _ := os.Stat(path)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

// Real git runs the installed hooks from `git rev-parse --git-path hooks`, also with
// core.hooksPath pointing elsewhere.
func TestRealGitRunsTheBlock(t *testing.T) {
	repo := gittest.NewRepo(t)
	custom := filepath.Join(repo.Dir, ".githooks")
	repo.Must("config", "core.hooksPath", custom)
	dir, err := repo.Git.Output(context.Background(), "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	require.NoError(t, err)
	require.Equal(t, custom, dir)
	_, err = Install(dir, false)
	require.NoError(t, err)
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\necho \"$*\" >> "+log+"\n"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	repo.WriteFile("a.txt", "a")
	repo.Commit("a commit")
	got, _ := os.ReadFile(log)
	assert.Equal(t, "hook pre-commit\nhook post-commit\n", string(got))
}

func TestParsePrePush(t *testing.T) {
	got, err := ParsePrePush(strings.NewReader("refs/heads/a 1234 refs/heads/a 0000000000\n\n(delete) 0000 refs/heads/b 5678\n"))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.False(t, got[0].Deletes())
	assert.True(t, got[1].Deletes())
	_, err = ParsePrePush(strings.NewReader("too few fields\n"))
	assert.Error(t, err)
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		st, _ := os.Stat(filepath.Join(dir, e.Name()))
		out[e.Name()] = st.Mode().String() + "\n" + string(bytes.TrimSpace(data))
	}
	return out
}

// A team's hook whose shebang sets -u (treat an unset variable as an error) still runs, and
// git-norma's block with it: the block reads the guard variable, which is unset outside
// git-norma's own git. (A red-team finding: every commit, merge and push failed with
// "GIT_NORMA_INTERNAL: parameter not set" once the hooks were installed.)
func TestShebangWithNounset(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	for _, name := range Names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh -eu\necho \"team $0\" >> \"$LOG\"\n"), 0o755))
	}
	_, err := Install(dir, false)
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\necho \"norma $2\" >> \"$LOG\"\n"), 0o755))
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + log}
	for _, name := range Names {
		cmd := exec.Command(filepath.Join(dir, name))
		cmd.Env = env
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s: %s", name, out)
	}
	got, _ := os.ReadFile(log)
	assert.Equal(t, 2*len(Names), strings.Count(string(got), "\n"), string(got))
	assert.Contains(t, string(got), "norma pre-push\n")
}

// A hook that is a symbolic link (to a script the project tracks) is not replaced by a copy of
// what it points at, and one that is not executable (git ignores it) does not keep our block
// from running: each is moved aside whole, runs after our block as git would run it (the one
// that is not executable does not), and uninstall puts it back as it was. (A red-team finding:
// the link became a copy, later edits of the script no longer ran, and uninstall left the
// copy; a hook not executable got our block and git ran neither, while status said
// "installed".)
func TestLinkedOrDisabledHookChainedAside(t *testing.T) {
	dir := t.TempDir()
	scripts := t.TempDir()
	log := filepath.Join(t.TempDir(), "log")
	target := filepath.Join(scripts, "pre-commit")
	require.NoError(t, os.WriteFile(target, []byte("#!/bin/sh\necho team-linked >> \"$LOG\"\n"), 0o755))
	link := filepath.Join(dir, "pre-commit")
	require.NoError(t, os.Symlink(target, link))
	disabled := filepath.Join(dir, "pre-push")
	orig := []byte("#!/bin/sh\necho team-disabled >> \"$LOG\"\n")
	require.NoError(t, os.WriteFile(disabled, orig, 0o644))
	require.NoError(t, os.Chmod(disabled, 0o644))

	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "chained", actions[0].Result, actions[0].Detail)
	assert.Equal(t, "chained", actions[3].Result, actions[3].Detail)
	assert.Equal(t, "installed", Status(dir)["pre-commit"])
	assert.Equal(t, "installed", Status(dir)["pre-push"])
	got, err := os.Readlink(link + chainedSuffix)
	require.NoError(t, err)
	assert.Equal(t, target, got)

	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\necho \"norma $2\" >> \"$LOG\"\n"), 0o755))
	for _, path := range []string{link, disabled} {
		cmd := exec.Command(path)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + log}
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", path, out)
	}
	data, _ := os.ReadFile(log)
	assert.Equal(t, "norma pre-commit\nteam-linked\nnorma pre-push\n", string(data))
	// the script edited later runs as edited
	require.NoError(t, os.WriteFile(target, []byte("#!/bin/sh\necho team-edited >> \"$LOG\"\n"), 0o755))
	cmd := exec.Command(link)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "LOG=" + log}
	require.NoError(t, cmd.Run())
	data, _ = os.ReadFile(log)
	assert.True(t, strings.HasSuffix(string(data), "team-edited\n"), string(data))

	_, err = Uninstall(dir)
	require.NoError(t, err)
	got, err = os.Readlink(link)
	require.NoError(t, err, "the link is back")
	assert.Equal(t, target, got)
	data, _ = os.ReadFile(disabled)
	assert.Equal(t, orig, data)
	st, _ := os.Stat(disabled)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	assert.NoFileExists(t, link+chainedSuffix)
	assert.NoFileExists(t, disabled+chainedSuffix)
}

// A pre-push hook whose temporary directory cannot be written (TMPDIR names a directory since
// removed, /tmp is full) still hands the push's refs to git-norma and to the hook's own
// commands: the copy of stdin goes to the git directory instead. (A red-team finding: every
// push failed with "cannot open : No such file".)
func TestPrePushWithoutTempDir(t *testing.T) {
	repo := gittest.NewRepo(t)
	dir, err := repo.Git.Output(context.Background(), "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	require.NoError(t, err)
	log := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pre-push"), []byte("#!/bin/sh\nwhile read a b c d; do echo \"team saw $c\" >> \""+log+"\"; done\n"), 0o755))
	_, err = Install(dir, false)
	require.NoError(t, err)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git-norma"), []byte("#!/bin/sh\nwhile read a b c d; do echo \"norma saw $c\" >> \""+log+"\"; done\n"), 0o755))
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv(GuardVar, "")
	remote := t.TempDir()
	repo.Must("init", "-q", "--bare", remote)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "removed"))
	repo.Must("push", "-q", remote, "HEAD:refs/heads/main")
	got, _ := os.ReadFile(log)
	assert.Equal(t, "norma saw refs/heads/main\nteam saw refs/heads/main\n", string(got))
	left, _ := filepath.Glob(filepath.Join(repo.Dir, ".git", "norma-pre-push.*"))
	assert.Empty(t, left, "the copy is removed")
}

// A linked hook that holds an older block of ours (the lines of --manual, in a script the
// project tracks) stays a link: it is reported, not replaced by an upgraded copy.
func TestLinkedHookWithOlderBlockKept(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "post-commit")
	old := "#!/bin/sh\n" + beginMarker + " v0 (old)\ngit-norma hook post-commit\n" + endMarker + "\necho mine\n"
	require.NoError(t, os.WriteFile(target, []byte(old), 0o755))
	link := filepath.Join(dir, "post-commit")
	require.NoError(t, os.Symlink(target, link))
	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "skipped", actions[1].Result)
	assert.Contains(t, actions[1].Detail, "--manual")
	got, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, target, got)
	data, _ := os.ReadFile(target)
	assert.Equal(t, old, string(data))
}

// A hook that already holds our block but was made non-executable gates nothing (git runs no
// part of it): status says so, and install moves the rest aside, as disabled as it was, and
// runs our block from a shim; a hook that was only our block is made executable again.
func TestDisabledHookWithOurBlock(t *testing.T) {
	dir := t.TempDir()
	_, err := Install(dir, false)
	require.NoError(t, err)
	prePush, preCommit := filepath.Join(dir, "pre-push"), filepath.Join(dir, "pre-commit")
	data, err := os.ReadFile(prePush)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(prePush, append(data, "echo team\n"...), 0o644))
	require.NoError(t, os.Chmod(prePush, 0o644))
	require.NoError(t, os.Chmod(preCommit, 0o644))
	assert.Equal(t, "not run (the hook is not executable)", Status(dir)["pre-push"])

	actions, err := Install(dir, false)
	require.NoError(t, err)
	assert.Equal(t, "upgraded", actions[0].Result, actions[0].Detail)
	assert.Equal(t, "chained", actions[3].Result, actions[3].Detail)
	for _, name := range []string{"pre-commit", "pre-push"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.NotZero(t, st.Mode().Perm()&0o100, name)
		assert.Equal(t, "installed", Status(dir)[name])
	}
	aside, err := os.ReadFile(prePush + chainedSuffix)
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\necho team\n", string(aside), "the rest, without our block")
	st, err := os.Stat(prePush + chainedSuffix)
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&0o111, "still disabled")
}

// A hook the user edited after install moved theirs aside (lines added to the shim) keeps
// those lines on uninstall: only git-norma's block goes, and the hook moved aside stays
// chained. (A red-team finding: uninstall renamed the moved hook over the edited one.)
func TestUninstallKeepsEditsOfTheShim(t *testing.T) {
	dir, path, orig, shim := chainedPythonHook(t)
	edited := strings.Replace(shim, "[ -x ", "echo my own line\n[ -x ", 1)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o755))

	actions, err := Uninstall(dir)
	require.NoError(t, err)
	assert.Equal(t, "removed block", actions[1].Result)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), "echo my own line\n", "the user's edit is kept")
	assert.NotContains(t, string(data), beginMarker)
	aside, err := os.ReadFile(path + chainedSuffix)
	require.NoError(t, err, "the hook moved aside is still there, and still chained")
	assert.Equal(t, orig, aside)
	assert.Contains(t, string(data), `exec "$(dirname "$0")/post-commit.norma-chained" "$@"`)
	// Removing the chain lines later would silently stop it: uninstall says where it is.
	assert.Contains(t, actions[1].Detail, path+chainedSuffix)
	assert.Contains(t, actions[1].Detail, "mv "+path+chainedSuffix+" "+path)
}

// A shim whose chain lines the user took out goes on uninstall, and the hook install moved
// aside, which git no longer runs, is named with how to put it back.
func TestUninstallNamesTheHookMovedAside(t *testing.T) {
	dir, path, orig, shim := chainedPythonHook(t)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(shim, chainCommands("post-commit"), "", 1)), 0o755))

	actions, err := Uninstall(dir)
	require.NoError(t, err)
	assert.Equal(t, "removed", actions[1].Result)
	assert.NoFileExists(t, path)
	aside, err := os.ReadFile(path + chainedSuffix)
	require.NoError(t, err, "kept as it was")
	assert.Equal(t, orig, aside)
	assert.Contains(t, actions[1].Detail, "mv "+path+chainedSuffix+" "+path)
}

// chainedPythonHook is a hooks dir whose post-commit, a python script (orig), install --force
// moved aside and chained from its shim: the dir, the hook's path, orig and the shim.
func chainedPythonHook(t *testing.T) (dir, path string, orig []byte, shim string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "post-commit")
	orig = []byte("#!/usr/bin/env python3\nprint('hi')\n")
	require.NoError(t, os.WriteFile(path, orig, 0o755))
	_, err := Install(dir, true)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return dir, path, orig, string(data)
}
