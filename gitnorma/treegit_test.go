package gitnorma

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// Every worktree manager the application makes confines git-norma's git on agents' work where
// the git config names a filter driver — the run's, the check's, and prune's and recovery's,
// which save what a dead run left — and the landing's checkout too when sandbox.network is
// off; a conditional include counts as a driver git-norma cannot see. Without a driver,
// Landlock or an App to say how, nothing is confined.
func TestWorktreesConfineFilterDrivers(t *testing.T) {
	if abi, why := sandbox.ABI(); abi == 0 {
		t.Skip(why)
	}
	t.Setenv(sandbox.ModeEnv, "")
	ctx := context.Background()
	r := gittest.NewRepo(t)
	open := func(sb *config.Sandbox) *Repo {
		repo, err := OpenRepo(ctx, r.Dir)
		require.NoError(t, err)
		repo.sandbox = sb
		return repo
	}
	auto := config.Default().Sandbox

	wm := open(&auto).Worktrees(ctx)
	assert.Nil(t, wm.TreeGit, "no filter driver named")
	assert.Nil(t, wm.CheckoutGit)

	r.Must("config", "includeIf.onbranch:norma/**.path", "agents.gitconfig")
	assert.NotNil(t, open(&auto).Worktrees(ctx).TreeGit, "a conditional include may name a driver on a task branch")
	r.Must("config", "--unset", "includeIf.onbranch:norma/**.path")

	r.Must("config", "filter.lfs.process", "git-lfs filter-process")
	wm = open(&auto).Worktrees(ctx)
	assert.NotNil(t, wm.TreeGit)
	assert.Nil(t, wm.CheckoutGit, "the network is open: the landing's checkout is the user's git")
	assert.DirExists(t, filepath.Join(r.Dir, ".git", "lfs"), "made for git-lfs, which a confined git-lfs could not")

	offline := auto
	offline.Network = false
	wm = open(&offline).Worktrees(ctx)
	assert.NotNil(t, wm.TreeGit)
	assert.NotNil(t, wm.CheckoutGit)

	off := auto
	off.Mode = string(sandbox.ModeOff)
	wm = open(&off).Worktrees(ctx)
	assert.Nil(t, wm.TreeGit, "no Landlock")
	assert.Nil(t, open(nil).Worktrees(ctx).TreeGit, "no App")

	app, err := OpenForHook(ctx, r.Dir)
	require.NoError(t, err)
	assert.NotNil(t, app.Repo.Worktrees(ctx).TreeGit, "the App's repository confines")
}
