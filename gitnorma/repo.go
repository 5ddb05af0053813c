package gitnorma

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/hooks"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// Repo is the repository a command runs in, resolved to its main worktree: run worktrees live
// under the main worktree's .norma/, so every command — from a subdirectory, from the main
// checkout or from inside a run's linked worktree — finds the same state.
type Repo struct {
	// Root is the main worktree's top-level directory.
	Root string
	// GitDir is the common git directory shared by all worktrees.
	GitDir string
	// Git runs in Root, marked with the hook recursion guard: git-norma's own commits and
	// merges must not re-trigger its hooks.
	Git git.Runner

	// sandbox is the app's config section confining what may do an agent's bidding (the
	// App sets it; nil: git-norma's git is never confined).
	sandbox *config.Sandbox

	// cliSettings is the agent CLIs' settings as this process's confined work found them,
	// shared by its runs (loop.CLISettings).
	cliSettings loop.CLISettings

	// filterDrivers asks once which filter drivers the git config names (treegit.go).
	filterDriversOnce  sync.Once
	filterDriverNames  []string
	filterDriverStores []string
}

// NormaDir is where git-norma keeps its state.
func (r *Repo) NormaDir() string { return filepath.Join(r.Root, ".norma") }

// Path joins elements under .norma/.
func (r *Repo) Path(elem ...string) string {
	return filepath.Join(append([]string{r.NormaDir()}, elem...)...)
}

// OpenRepo finds the repository containing dir. A bare repository, a directory outside any
// repository or a missing git binary are fatal errors that say what to do.
func OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fatalf("cd into an existing directory of a git repository", "%s is not a directory", dir)
	}
	if owner, ok := normaOwner(dir); ok {
		dir = owner
	}
	// The everyday layouts are read from the file system; git is asked about the others.
	l, ok := git.Discover(dir)
	if ok {
		if _, err := exec.LookPath("git"); err != nil {
			return nil, repoError(dir, err)
		}
	} else {
		w, err := git.Runner{Dir: dir}.Where(ctx)
		if err != nil {
			return nil, repoError(dir, err)
		}
		if w.Bare {
			return nil, fatalf("clone it (git clone "+dir+" work) or add a worktree (git worktree add), then run git norma there",
				"%s is a bare repository: git norma needs a work tree", dir)
		}
		if !w.InWorkTree {
			return nil, fatalf("run git norma from the repository's work tree", "%s is inside the git directory, not a work tree", dir)
		}
		l = w.Layout
	}
	root, err := mainWorktree(l.CommonDir, l.GitDir, l.TopLevel)
	if err != nil {
		return nil, err
	}
	return &Repo{Root: root, GitDir: l.CommonDir, Git: git.Runner{Dir: root, Env: []string{hooks.GuardEnv}}}, nil
}

// normaOwner is the outermost checkout whose git-norma worktrees (.norma/runs/...,
// .norma/checks/...) dir is in, which is then the repository: an agent or a check may have
// made its workspace's .git a repository of its own, whose config (core.fsmonitor) git would
// run unconfined for a command of yours, and may nest more of the same shape inside. A
// checkout counts when its .norma holds git-norma's store or config (the store is never in
// git: a checkout of a commit from before git-norma leaves it there).
func normaOwner(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for _, p := range []string{abs, resolved(abs)} {
		parts := strings.Split(p, string(filepath.Separator))
		for i := 1; i+1 < len(parts); i++ {
			if parts[i] != ".norma" || (parts[i+1] != "runs" && parts[i+1] != "checks") {
				continue
			}
			owner := strings.Join(parts[:i], string(filepath.Separator))
			if owner == "" {
				owner = string(filepath.Separator)
			}
			for _, f := range []string{"norma.db", "config.json"} {
				if st, err := os.Lstat(filepath.Join(owner, ".norma", f)); err == nil && st.Mode().IsRegular() {
					return owner, true
				}
			}
		}
	}
	return "", false
}

// mainWorktree finds the main worktree's top level. In the main worktree (its git dir is the
// common dir) that is simply --show-toplevel, wherever the git dir lives (--separate-git-dir).
// From a linked worktree it is the parent of a common dir named .git; anything else is a
// layout where git itself cannot name the main work tree from here.
func mainWorktree(common, gitDir, toplevel string) (string, error) {
	if gitDir == common {
		return toplevel, nil
	}
	if filepath.Base(common) == ".git" {
		if st, err := os.Stat(filepath.Dir(common)); err == nil && st.IsDir() {
			return filepath.Dir(common), nil
		}
	}
	return "", fatalf("run git norma from the main worktree", "cannot tell the main work tree of %s from this linked worktree", common)
}

func repoError(dir string, err error) error {
	if errors.Is(err, exec.ErrNotFound) {
		return fatalf("install git 2.38 or newer", "git was not found on PATH")
	}
	var ge *git.Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
		return fatalf("cd into a git repository, or create one with: git init", "not a git repository: %s", dir)
	}
	if errors.As(err, &ge) && ge.ExitCode == -1 {
		return fatalf("install git 2.38 or newer", "%s", strings.TrimSpace(ge.Stderr))
	}
	return withKind(ErrEnvironment, err)
}

// Worktrees returns the worktree manager of the repository (guarded like Git), whose git
// commands on the work agents made are confined where they may start the user's filter
// drivers (treegit.go).
func (r *Repo) Worktrees(ctx context.Context) *worktree.Manager {
	wm := &worktree.Manager{Git: r.Git, CommonDir: r.GitDir, RunsDir: r.Path("runs")}
	wm.TreeGit, wm.CheckoutGit = r.driverConfinement(ctx)
	return wm
}
