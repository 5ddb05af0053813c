package gitnorma

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/stamp"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/notes"
)

// App is one command's view of a repository: where it is, its configuration, and the state
// stores, opened only when a use case needs them (status does not pay for what run needs).
type App struct {
	Repo   *Repo
	Config config.Config
	// Now is the clock (replaced in tests).
	Now func() time.Time

	// backlogMu guards backlog, made on first use and shared by a parallel loop's runs.
	backlogMu sync.Mutex
	backlog   tracker.Tracker
	// redact scrubs credentials from what leaves the private run directory.
	redact redact.Redactor
	// crash is where the crash tests kill the process (GIT_NORMA_CRASH); nil elsewhere.
	crash *crashpoints
	// configErr is why the config did not load (OpenForHook only: Open fails instead), and
	// uninitialised says it is because git-norma was never set up here, or .norma/ is gone.
	configErr     error
	uninitialised bool
}

// Open resolves the repository containing dir and reads its config. It fails when the
// repository has not been initialised with `git norma init`.
func Open(ctx context.Context, dir string) (*App, error) {
	a, err := OpenForHook(ctx, dir)
	if err == nil && a.configErr != nil {
		return nil, a.configErr
	}
	return a, err
}

// OpenForHook opens the repository containing dir for git's hooks, which must work whatever
// state git-norma is in there: without .norma/ or a config that loads it opens with the
// default config, configErr saying why. The merge and push gates need no config: they read
// git and the run store.
func OpenForHook(ctx context.Context, dir string) (*App, error) {
	repo, err := OpenRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	a := &App{Repo: repo, Config: config.Default(), Now: time.Now, redact: redact.New(os.Environ()),
		crash: crashpointsFrom(os.Getenv(crashEnv))}
	repo.sandbox = &a.Config.Sandbox
	if _, err := os.Stat(repo.Path("config.json")); errors.Is(err, os.ErrNotExist) {
		a.configErr = fatalf("run: git norma init", "git-norma is not initialised in %s", repo.Root)
		a.uninitialised = true
	} else if cfg, err := loadConfig(repo.Path("config.json")); err != nil {
		a.configErr = err
	} else {
		a.Config = cfg
	}
	return a, nil
}

// OpenStore opens .norma/norma.db, creating or migrating it. A use case opens it once and
// hands it on (a loop to its runs): one writer connection per process.
func (r *Repo) OpenStore(ctx context.Context) (*store.Store, error) {
	st, err := store.Open(ctx, r.Path("norma.db"))
	switch {
	case errors.Is(err, store.ErrSchemaTooNew):
		return nil, fatalf("install a newer git-norma (the db was written by one)", "%v", err)
	case errors.Is(err, store.ErrCorrupt):
		return nil, fatalf("move it aside (mv .norma/norma.db .norma/norma.db.bad) and run git norma init", "%v", err)
	case err != nil:
		return nil, withKind(ErrEnvironment, err)
	}
	return st, nil
}

// Tracker returns the task backend the config selects: the bd CLI for "beads" (and for "auto"
// when bd is installed and the repository has a bd workspace), else the embedded jsonl file.
func (a *App) Tracker() (tracker.Tracker, error) {
	a.backlogMu.Lock()
	defer a.backlogMu.Unlock()
	if a.backlog != nil {
		return a.backlog, nil
	}
	kind := a.TrackerKind()
	switch kind {
	case "beads":
		if _, err := exec.LookPath("bd"); err != nil {
			return nil, fatalf(`install bd (Beads), or set "tracker": "jsonl" in .norma/config.json`,
				"the tracker is beads but bd is not installed or not on PATH")
		}
		bd := tracker.NewBD(a.Repo.Root)
		// Every bd call is made as this worker: its writes carry the actor, its claims are
		// refused when another worker holds the task.
		bd.Env = append(bd.Env, "BEADS_ACTOR="+a.Config.WorkerID())
		a.backlog = bd
	default:
		a.backlog = tracker.NewJSONL(filepath.Join(a.Repo.Root, ".beads", "issues.jsonl"), a.Repo.Path("locks", "tasks.lock"), a.Config.IDPrefix).
			WithIndex(a.Repo.Path("cache", "backlog-heads.idx"), hasVerify)
	}
	// An agent calling git norma from inside a step writes the backlog as itself: unstamped,
	// so the guard catches it.
	if os.Getenv(loop.StepDirEnv) == "" {
		a.backlog = stamp.Tracker{Inner: a.backlog, Root: a.Repo.Root, StampReads: kind == "beads"}
	}
	return a.backlog, nil
}

// TrackerKind resolves "auto" to the backend in use: beads or jsonl.
func (a *App) TrackerKind() string {
	if a.Config.Tracker == "auto" {
		if tracker.BDAvailable(a.Repo.Root) {
			return "beads"
		}
		return "jsonl"
	}
	return a.Config.Tracker
}

// NotesJournal is the repository's git-notes journal, its writers serialised across
// processes by .norma/locks/notes.lock.
func (r *Repo) NotesJournal() notes.Journal {
	return notes.Journal{Git: r.Git, Lock: func(ctx context.Context) (func(), error) {
		return flock.Wait(ctx, r.Path("locks", "notes.lock"))
	}}
}

// withWorktreeLock runs fn holding the worktree lock, which serialises adding, removing and
// pruning worktrees: parallel runs each create their own, and git's worktree bookkeeping is
// not meant for concurrent changes.
func (r *Repo) withWorktreeLock(ctx context.Context, fn func() error) error {
	unlock, err := flock.Wait(ctx, r.Path("locks", "worktrees.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// ValidateTaskID refuses anything that is not a task id before it becomes a path or a ref.
func (a *App) ValidateTaskID(id string) error {
	err := tracker.ValidateID(a.Config.IDPrefix, id)
	if a.TrackerKind() == "beads" {
		err = tracker.ValidateBDID(id) // bd's workspace prefix, not id_prefix, names its tasks
	}
	if err != nil {
		return usagef("list tasks with: git norma task list", "%v", err)
	}
	return nil
}
