package gitnorma

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/loop/sandbox"
	"github.com/git-norma/git-norma/worktree"
)

// git-norma's own git commands on an agent's work (the step commit, the check worktree's
// checkout) run the filter drivers the user's git config names — git-lfs, git-crypt,
// nbstripout — on the files the agent's .gitattributes points them at; git-lfs also reads
// the server it talks to from the agent's .lfsconfig. An agent cannot change the drivers, but
// it chooses their input: with sandbox.network off it could still have git-lfs carry a secret
// to a server of its choosing. So where the config names any, those commands run confined
// like a check command: writing only that work tree, its git directory and the repository's
// objects, refs and LFS store, with the network as sandbox.network says.

// filterDriverKeys matches the config keys that name a filter driver's command.
const filterDriverKeys = `^filter\..+\.(clean|smudge|process)$`

// namesFilterDrivers says whether the git config in force names a filter driver's command.
// Asked once per command; when git cannot say, the answer is yes (confining costs only time).
func (r *Repo) namesFilterDrivers(ctx context.Context) bool {
	r.filterDrivers.Do(func() {
		out, err := r.Git.Output(ctx, "config", "--get-regexp", filterDriverKeys)
		r.hasFilterDrivers = out != "" || (err != nil && git.ExitCodeOf(err) != 1)
	})
	return r.hasFilterDrivers
}

// worktrees is the repository's worktree manager, whose git commands on work trees agents or
// checks wrote are confined where they may run a filter driver of the user's (see above).
// Unconfined (no Landlock, or sandbox.mode off) they run as the rest of git-norma's git: the
// README says so.
func (cf confiner) worktrees(ctx context.Context) *worktree.Manager {
	wm := cf.repo.Worktrees()
	if c, err := cf.withoutProbe(); err == nil && c.landlock() && cf.repo.namesFilterDrivers(ctx) {
		wm.TreeGit = cf.treeGit(c.launcher)
	}
	return wm
}

// treeGit confines git on the work tree tree (git directory gitDir) through the sandbox
// launcher at launcher.
func (cf confiner) treeGit(launcher string) func(tree, gitDir string) git.Wrap {
	return func(tree, gitDir string) git.Wrap {
		common := cf.repo.GitDir
		p := sandbox.Policy{Landlock: true, Network: cf.cfg.Network, Writable: []string{
			tree, gitDir, os.TempDir(),
			filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs"),
			filepath.Join(common, "lfs"),
		}}
		return func(cmd *exec.Cmd) (func() error, error) {
			l, err := sandbox.Wrap(cmd, launcher, p)
			if err != nil {
				return nil, err
			}
			// Stopped through the launcher, which stops git and sweeps what it started.
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
			return func() error {
				l.Started()
				return l.Report().Err()
			}, nil
		}
	}
}
