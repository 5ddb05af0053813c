// Package guard is the fallback guard: where the kernel cannot confine an agent, it keeps a copy
// of the repository's small shared files (config, hooks, excludes, attributes) and the
// values of the guarded refs before each agent step, and after the step reports every change
// and restores what it kept. It also watches the main checkout's index and tracked files and
// the run store's records of the run's task, which it reports (and, for forged runs, removes).
package guard

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
)

// Guard is the fallback guard of one run: where kernel confinement is missing, it is what
// stands between an agent and the user's checkout, refs and shared git state, and git-norma's
// own state. Before every agent step it keeps a copy of what is small (Snapshot), after the
// step it compares, restores what it can, and reports each change (Check).
type Guard struct {
	Places
	Now   func() time.Time
	Store *store.Store
	// RunID, TaskID and Target are the run's, its task's and the branch it lands on.
	RunID, TaskID, Target string
	// JSONLBacklog: the backlog is git-norma's own jsonl file, which the guard can restore.
	JSONLBacklog bool
	// Confined says the kernel keeps the step's agent from writing every place Check
	// watches (Landlock): then Check is skipped, because it cannot tell the user's own changes
	// made meanwhile (a commit, an edit in the main checkout) from an agent's. nil: no
	// confinement.
	Confined func() bool
	// LiveTasks are the tasks whose lock a live process holds: a run of the task, its landing
	// (which may move the task branch after the run's end is recorded), or git norma land.
	LiveTasks func() map[string]bool
	// HoldsLanding: the caller holds the landing lock already (a landing's own checks), so
	// Snapshot does not take it (a second flock of it in this process would wait forever).
	HoldsLanding bool
	// KeepDir is where a restore keeps the file it replaces or removes (the run's directory),
	// in a directory of its own (KeptPrefix): the guard cannot tell an agent's change from a
	// person's made in the main checkout during the step (a line of .git/info/exclude, a hook
	// installed, a setting). "" keeps nothing.
	KeepDir string
	// locks releases the locks Snapshot took for the step (nil when not held).
	locks func()
	// kept is the directory Check keeps replaced files in ("" until the first).
	kept string
}

// Places are where the repository keeps what the guard watches.
type Places struct {
	// Root is the main checkout; GitDir its git directory; NormaDir its .norma.
	Root, GitDir, NormaDir string
	// Git runs git in Root.
	Git git.Runner
}

func (p Places) normaPath(elem ...string) string {
	return filepath.Join(append([]string{p.NormaDir}, elem...)...)
}

// Active says the fallback guard watches the repository for this step.
func (g *Guard) Active() bool {
	return g != nil && (g.Confined == nil || !g.Confined())
}

// Snapshot is the state of the guarded places before a step.
type Snapshot struct {
	files []savedFile // smallFiles, restored whole
	// hooks are the regular files and links of the hooks directory, by name.
	hooksDir string
	hooks    map[string]savedFile
	configs  map[string]savedFile // the shared config files, by path
	refs     map[string]string    // the target's and the task branches', by ref name
	// packed is packed-refs, put back only should it become something else than a file (a
	// named pipe would hang every git command).
	packed   savedFile
	remotes  map[string]string // what the hooks' gate takes as published (remotes)
	replaces map[string]string // git replace refs: git reads one commit as another
	head     []byte
	index    *indexSnapshot
	// live are the tasks a live process held the lock of (a run, a landing, land).
	live map[string]bool
	// unlanded are the task branches holding a PASS not landed yet, judged from the store as
	// it was before the step (unlandedPasses).
	unlanded map[string]bool
	links    map[string]bool // refLinks
	// db are the store's records of this run and its task; dbFile is the file's identity.
	db     store.TaskRecords
	dbFile string
	// pending are the violations of every run not cleared yet: the agent of one task may not
	// clear another's, which keeps every run from starting until the user has seen it.
	pending []store.Violation
	// unshielded is the store's record that unconfined processes ran here (nil: none), which
	// decides whether a PASS read from the store is evidence (gitnorma/trust.go).
	unshielded *store.Unshielded
	schema     string // store.Facts.Schema
}

// LockFile, in .norma/locks, is held by every guard from Snapshot to Check. A confined run
// makes its task branch only while no guard holds it: a guard takes a task branch made during
// the step by a run that ended before Check for its agent's doing. (Unconfined runs make theirs
// under the landing lock, which a step's guard holds too.)
const LockFile = "guard.lock"

// Snapshot copies what is small and fingerprints the rest. It holds the landing lock until
// Check (or Release): no landing moves the target while the agent works, so a target that moved
// is the agent's doing — a landing record in the store, which the agent can write as well,
// never excuses it. It holds LockFile as long.
func (g *Guard) Snapshot(ctx context.Context) (*Snapshot, error) {
	g.Release() // a step that ended without its Check
	holder := fmt.Sprintf("run %s of %s, whose unconfined agent works (the fallback guard, process %d)", g.RunID, g.TaskID, os.Getpid())
	landing := func() {}
	if !g.HoldsLanding {
		unlock, err := flock.WaitFor(ctx, g.normaPath("locks", "land.lock"), holder, nil)
		if err != nil {
			return nil, err
		}
		landing = unlock
	}
	unguard, err := flock.WaitFor(ctx, g.normaPath("locks", LockFile), holder, nil)
	if err != nil {
		landing()
		return nil, err
	}
	g.locks = func() { unguard(); landing() }
	s, err := g.snapshot(ctx)
	if err != nil {
		g.Release()
		return nil, err
	}
	return s, nil
}

func (g *Guard) snapshot(ctx context.Context) (s *Snapshot, err error) {
	s = &Snapshot{configs: map[string]savedFile{}, hooks: map[string]savedFile{}}
	for _, p := range g.smallFiles() {
		s.files = append(s.files, saveFile(p))
	}
	for _, p := range append(g.configPaths(), g.includedConfigs(ctx)...) {
		s.configs[p] = saveFile(p)
	}
	if dir, err := g.Git.GitPath(ctx, "hooks"); err == nil {
		s.hooksDir, s.hooks = dir, saveHooks(dir)
	}
	s.live = g.liveTasks()
	s.links = g.refLinks()
	if s.refs, err = g.refs(ctx, false); err != nil {
		return nil, err
	}
	s.unlanded = g.unlandedPasses(ctx, s.refs)
	if s.remotes, err = g.remotes(ctx, false); err != nil {
		return nil, err
	}
	if s.replaces, err = g.replaces(ctx, false); err != nil {
		return nil, err
	}
	s.head = readRegular(filepath.Join(g.GitDir, "HEAD"))
	s.packed = saveFile(filepath.Join(g.GitDir, "packed-refs"))
	if s.index, err = g.snapshotIndex(ctx); err != nil {
		return nil, err
	}
	if g.Store == nil {
		return s, nil
	}
	if s.db, err = g.Store.TaskRecords(ctx, g.RunID, g.TaskID); err != nil {
		return nil, err
	}
	if s.pending, err = g.Store.PendingViolations(ctx); err != nil {
		return nil, err
	}
	u, ok, err := g.Store.Facts().UnshieldedSince(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		s.unshielded = &u
	}
	if s.schema, err = g.Store.Facts().Schema(ctx); err != nil {
		return nil, err
	}
	s.dbFile = fileIdentity(g.normaPath("norma.db"))
	return s, nil
}

// Check compares the guarded places with the snapshot, restores what it can and returns one
// line per change: the path (relative to the repository) and what became of it.
func (g *Guard) Check(ctx context.Context, s *Snapshot) []string {
	defer g.Release()
	g.kept = ""
	defer g.noteKept(ctx)
	var found []string
	add := func(path, fate string) { found = append(found, fmt.Sprintf("%s (%s)", g.rel(path), fate)) }
	// Before any git command: a named pipe put where git opens a file of its own would hang it.
	g.checkGitFiles(s, add)
	// Configs first: until they are set back (core.bare, say) git itself may not work here.
	for _, p := range sortedKeys(s.configs) {
		if change := g.configChange(ctx, s.configs[p]); change != "" {
			found = append(found, change)
		}
	}
	for _, f := range s.files {
		if now := saveFile(f.path); !f.same(now) {
			g.keep(now)
			add(f.path, outcome(f.restore(), "restored", "could not restore: "))
		}
	}
	if s.hooksDir != "" {
		now := saveHooks(s.hooksDir)
		for _, name := range sortedKeys(now, s.hooks) {
			before, had := s.hooks[name]
			after, has := now[name]
			switch {
			case !had:
				g.keep(after)
				add(after.path, outcome(os.Remove(after.path), "removed", "could not restore: "))
			case !has || !before.same(after):
				g.keep(after)
				add(before.path, outcome(before.restore(), "restored", "could not restore: "))
			}
		}
	}
	// Links first: the refs below are read from the files, or through git while a link is left.
	g.checkRefLinks(s, add)
	viaGit := len(g.refLinks()) > 0
	g.checkRefs(ctx, s, viaGit, add)
	g.checkRemotes(ctx, s, viaGit, add)
	g.checkReplaces(ctx, s, viaGit, add)
	if head := readRegular(filepath.Join(g.GitDir, "HEAD")); !bytes.Equal(head, s.head) {
		add(filepath.Join(g.GitDir, "HEAD"), "not restored: the main checkout's files follow it; switch back yourself")
	}
	found = append(found, g.checkIndex(ctx, s.index)...)
	found = append(found, g.checkStore(ctx, s)...)
	sort.Strings(found)
	return found
}

// Release lets go of the locks Snapshot took, if still held.
func (g *Guard) Release() {
	if g != nil && g.locks != nil {
		g.locks()
		g.locks = nil
	}
}

// outcome is done, or failed followed by the error.
func outcome(err error, done, failed string) string {
	if err != nil {
		return failed + err.Error()
	}
	return done
}

// firstLine is the first line of err, trimmed: git's refusal without its hints.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSpace(msg)
}

func sortedKeys[V any](ms ...map[string]V) []string {
	var out []string
	for _, m := range ms {
		out = slices.AppendSeq(out, maps.Keys(m))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (g *Guard) rel(p string) string {
	if rel, err := filepath.Rel(g.Root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// liveTasks asks LiveTasks, if set.
func (g *Guard) liveTasks() map[string]bool {
	if g.LiveTasks == nil {
		return map[string]bool{}
	}
	return g.LiveTasks()
}
