package gitnorma

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// git-norma's own git commands on an agent's work (the step commit, the checkouts of a task
// branch in a run or check worktree) run the user's filter drivers (git-lfs, git-crypt,
// nbstripout) on the files the agent's .gitattributes points them at, and git-lfs talks to the
// server the agent's .lfsconfig names: with sandbox.network off an agent could still have
// git-lfs carry a secret to a server of its choosing, and a driver named by a path in the
// work tree is the agent's own code. So where the config names any, those commands run
// confined like a check command: writing only that work tree, its git directory, the
// repository's objects and the drivers' stores (no ref), with the network as sandbox.network
// says. The landing's fast-forward of the user's checkout writes what the user's git writes
// there, hooks included: it is kept off the network only, when sandbox.network is off.

// filterDriverKeys matches the config keys that name a filter driver's command, the
// conditional includes, which may name one where the main checkout does not see it (on a task
// branch, in another git directory), and git-lfs's store.
const filterDriverKeys = `^(filter\..+\.(clean|smudge|process)|includeif\..+\.path|lfs\.storage)$`

// filterDrivers says what the git config in force names, asked once per command: the filter
// drivers it names a command of (an unnamed one stands for those git-norma cannot know of,
// behind a conditional include, or when git cannot say: confining costs only time), and where
// they keep what they clean — git-lfs's store (lfs.storage, else <git dir>/lfs), made here
// when git-lfs is a driver (a confined git-lfs could not make it), and git-annex's.
func (r *Repo) filterDrivers(ctx context.Context) (names, stores []string) {
	r.filterDriversOnce.Do(func() {
		out, err := r.Git.ConfigMatching(ctx, filterDriverKeys)
		if err != nil && git.ExitCodeOf(err) != 1 {
			r.filterDriverNames = []string{""}
		}
		lfs := filepath.Join(r.GitDir, "lfs")
		for _, line := range strings.Split(out, "\n") {
			key, value, _ := strings.Cut(line, " ")
			section, rest, _ := strings.Cut(key, ".")
			switch name := rest[:max(0, strings.LastIndexByte(rest, '.'))]; {
			case section == "filter":
				r.filterDriverNames = append(r.filterDriverNames, name)
			case section == "includeif":
				r.filterDriverNames = append(r.filterDriverNames, "")
			case key == "lfs.storage" && strings.TrimSpace(value) != "":
				if lfs = expandHome([]string{strings.TrimSpace(value)})[0]; !filepath.IsAbs(lfs) {
					lfs = filepath.Join(r.GitDir, lfs)
				}
			}
		}
		if slices.Contains(r.filterDriverNames, "lfs") {
			_ = os.MkdirAll(lfs, 0o755)
		}
		r.filterDriverStores = []string{lfs, filepath.Join(r.GitDir, "annex")}
	})
	return r.filterDriverNames, r.filterDriverStores
}

// driverConfinement confines git-norma's git commands that may start the user's filter
// drivers on an agent's work (see above): on a work tree agents or checks wrote (tree), and in
// the user's checkout of a landing. Both nil where nothing is to be confined (no driver named,
// no Landlock, or no App to say how).
func (r *Repo) driverConfinement(ctx context.Context) (tree func(tree, gitDir string) git.Wrap, checkout git.Wrap) {
	if r.sandbox == nil {
		return nil, nil
	}
	cf := confiner{cfg: *r.sandbox, repo: r}
	c, err := cf.withoutProbe()
	if err != nil || !c.landlock() {
		return nil, nil
	}
	drivers, stores := r.filterDrivers(ctx)
	if len(drivers) == 0 {
		return nil, nil
	}
	// In the launcher's pid namespace where the kernel gives one, as agents and checks run:
	// there the user's daemons' unix sockets are hidden (tmux, the session bus would run an
	// agent's driver's commands outside the sandbox), and what it leaves running ends with it.
	// Asked when git first runs so: the probe costs a start of git-norma.
	namespace := sync.OnceValue(func() bool {
		ns, _, _ := sandbox.Namespaces(c.launcher)
		return ns
	})
	// No ref: git-norma moves the task branch outside the sandbox (worktree's commitIndex), and
	// a driver named by a path in the work tree (sh tools/clean.sh) is the agent's own code.
	tree = func(tree, gitDir string) git.Wrap {
		return func(ctx context.Context, cmd *exec.Cmd) error {
			// A TMPDIR of its own, as a check's: the user's holds other runs' private
			// directories (their agents' and checks' TMPDIR and git objects).
			tmp, err := os.MkdirTemp("", "git-norma-driver-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
			return sandbox.RunAlone(ctx, c.launcher, namespace(), cmd, sandbox.Policy{Landlock: true, Network: cf.cfg.Network,
				Writable: append([]string{tree, gitDir, tmp, filepath.Join(r.GitDir, "objects")}, stores...)})
		}
	}
	if !cf.cfg.Network {
		// The user's checkout, with the user's hooks: their background jobs and daemons are theirs.
		checkout = func(ctx context.Context, cmd *exec.Cmd) error {
			return sandbox.RunAlone(ctx, c.launcher, false, cmd, sandbox.Policy{Landlock: true, Network: false, Writable: []string{"/"}})
		}
	}
	return tree, checkout
}
