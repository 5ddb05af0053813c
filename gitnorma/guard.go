package gitnorma

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/stamp"
	"github.com/git-norma/git-norma/loop"
)

// guarded lists the places of the run dir no agent may write: the run dir itself and its
// summary (the steps and the artifacts are fingerprinted on their own, see runDirLines).
// Checking them costs a few stat calls, never a walk of the repository. The shared git state,
// git-norma's config and the store are the fallback guard's (gitnorma/guard).
func (w workspace) guarded() []string {
	return []string{w.runDir, filepath.Join(w.runDir, "norma.md")}
}

// ownGitLines fingerprint git-norma's own git directory for the worktree: its HEAD says where a
// rescue commits, its record which git directory is the run's (worktree/runadmin.go).
func (w workspace) ownGitLines() []string {
	own := filepath.Join(w.runDir, "git")
	var lines []string
	for _, name := range []string{"HEAD", "commondir", "agent-gitdir", "index"} {
		lines = append(lines, guard.StrictStatLine(filepath.Join(own, name)))
	}
	return lines
}

// fingerprint is one line per guarded path (and per entry of a guarded directory), and the
// backlog's lines: name, size, mode and modification time.
func (w workspace) fingerprint() string {
	lines := append(stamp.Fingerprint(w.root), guard.StatLine(stamp.OutsidePath(w.root)))
	for _, p := range w.guarded() {
		lines = append(lines, guard.StatLine(p))
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				if e.Name() == "workspace" || e.Name() == "steps" || e.Name() == "artifacts" || e.Name() == backlogLinkName ||
					e.Name() == "setup.txt" && e.Type().IsRegular() || strings.HasPrefix(e.Name(), guard.KeptPrefix) {
					// The agent's own places, the orchestrator's between steps, the guard's, the
					// log of a guarded worktree.setup (as a file only: a link, a FIFO or a
					// directory in its place is an agent's, which that log would go through).
					continue
				}
				lines = append(lines, guard.StatLine(filepath.Join(p, e.Name())))
			}
		}
	}
	lines = append(lines, w.runDirLines()...)
	lines = append(lines, w.ownGitLines()...)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// runDirLines fingerprint the run's earlier steps (their input, output and logs: what the
// journal and the verdicts were made from) and artifacts/progress.md, which the orchestrator
// writes between steps. The newest step directory is the step's own, which its agent may
// write; other artifacts are the agents' to share (spec: artifacts/).
func (w workspace) runDirLines() []string {
	steps := filepath.Join(w.runDir, "steps")
	entries, _ := os.ReadDir(steps) // sorted by name
	dirs := slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return !e.IsDir() })
	lines := []string{guard.StatLine(filepath.Join(w.runDir, "artifacts", "progress.md"))}
	for i, d := range dirs {
		if i == len(dirs)-1 {
			break // the step's own
		}
		_ = filepath.WalkDir(filepath.Join(steps, d.Name()), func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				lines = append(lines, guard.StatLine(p))
			}
			return nil
		})
	}
	return lines
}

// OutsideChanges implements loop.Workspace: the guarded paths that differ from the snapshot,
// each with what became of it — the fallback guard restores what it kept a copy of — and, if
// there is any, the violation recorded for the user to see (see violation.go).
func (w workspace) OutsideChanges(ctx context.Context, snap loop.Snapshot) ([]string, error) {
	if w.confined {
		return nil, nil // the kernel refused every such write (see Snapshot)
	}
	// The guard's snapshot took the landing lock: no landing moved the target or the main
	// checkout while the agent worked; it lets go of it once it has looked (or here, whatever
	// happens). Under the backlog lock no git-norma write is half done and the stamp is current.
	defer w.guard.Release()
	unlock, err := flock.Wait(ctx, stamp.LockPath(w.root))
	if err != nil {
		return nil, err
	}
	defer unlock()
	var found []string
	if gs, ok := snap.Guard.(*guard.Snapshot); ok && w.guard.Active() {
		found = w.guard.Check(ctx, gs)
	}
	changed := w.changedPaths(snap)
	defer func() { // looked after, violation or not
		_ = os.Remove(filepath.Join(w.runDir, guardPendingFile))
		markPending(ctx, w.guard, false)
	}()
	if len(changed)+len(found) > 0 {
		changed = append(changed, found...)
		sort.Strings(changed)
		if w.guard != nil {
			recordViolation(ctx, w.guard, changed)
		}
	}
	return changed, nil
}

// changedPaths are the fingerprinted paths that changed, the backlog judged by its stamp.
func (w workspace) changedPaths(snap loop.Snapshot) []string {
	now := w.fingerprint()
	if now == snap.Outside {
		return nil
	}
	before, after := lineSet(snap.Outside), lineSet(now)
	seen := map[string]bool{}
	var changed []string
	for _, set := range []map[string]bool{before, after} {
		for l := range set {
			if before[l] && after[l] {
				continue
			}
			_, path, _ := strings.Cut(l, "\t")
			rel, err := filepath.Rel(w.root, path)
			if err == nil && !seen[rel] {
				seen[rel] = true
				changed = append(changed, rel)
			}
		}
	}
	outsideRel, _ := filepath.Rel(w.root, stamp.OutsidePath(w.root))
	// git-norma found the backlog changed by someone else while this step ran, before one of
	// its own writes (which would otherwise hide it: it rewrites the backlog and re-stamps it).
	changedOutside := seen[outsideRel]
	isBacklog := func(p string) bool {
		return p == outsideRel || p == ".beads" || strings.HasPrefix(p, ".beads"+string(filepath.Separator))
	}
	if stamp.AsLeft(w.root) || changedOutside { // only git-norma's writes since, or reported below
		changed = slices.DeleteFunc(changed, isBacklog)
	}
	if changedOutside {
		changed = append(changed, ".beads")
	}
	jsonl, _ := filepath.Rel(w.root, backlogFile(w.root))
	for i, p := range changed {
		fate := "not restored"
		if p == jsonl {
			if ok, kept := w.restoreBacklog(before); ok {
				fate = "restored"
				if rel, err := filepath.Rel(w.root, kept); kept != "" && err == nil {
					fate += "; the file it replaced is kept as " + filepath.ToSlash(rel)
				}
			}
		}
		changed[i] = filepath.ToSlash(p) + " (" + fate + ")"
	}
	return changed
}

func lineSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l != "" {
			set[l] = true
		}
	}
	return set
}
