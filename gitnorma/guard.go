package gitnorma

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// guarded lists the places no agent may write while it runs, besides the backlog: git-norma's
// config and the run dir outside the workspace, the steps and the artifacts (written by the
// orchestrator between steps). Checking them costs a few stat calls, never a walk of the
// repository. (The store is not among them: a hook's check may write it meanwhile.)
func (w workspace) guarded() []string {
	guarded := []string{
		filepath.Join(w.root, ".norma", "config.json"),
		w.runDir,
		filepath.Join(w.runDir, "norma.md"),
	}
	if w.git.hooksDir != "" {
		guarded = append(guarded, w.git.hooksDir)
	}
	return guarded
}

// gitGuard is the repository's own places an agent could use to reach beyond its run, shared
// by a run worktree with the user's checkout: the hooks directory (a planted hook runs in the
// user's next git command) and the shared config (aliases, core.hooksPath, core.fsmonitor
// run programs; see configProgramsLine).
type gitGuard struct {
	// configs are the shared config and the main worktree's own (read when the repository
	// sets extensions.worktreeConfig).
	configs  []string
	hooksDir string
}

func (a *App) gitGuard(ctx context.Context) gitGuard {
	g := gitGuard{configs: []string{filepath.Join(a.Repo.GitDir, "config"), filepath.Join(a.Repo.GitDir, "config.worktree")}}
	if dir, err := a.HooksDir(ctx); err == nil {
		g.hooksDir = dir
	}
	return g
}

// fingerprint is one line per guarded path (and per entry of a guarded directory), and the
// backlog's lines: name, size, mode and modification time.
func (w workspace) fingerprint() string {
	lines := append(backlogFingerprint(w.root), statLine(backlogOutsidePath(w.root)))
	for _, c := range w.git.configs {
		lines = append(lines, configProgramsLine(c))
	}
	for _, p := range w.guarded() {
		lines = append(lines, statLine(p))
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			entries, _ := os.ReadDir(p)
			for _, e := range entries {
				if e.Name() == "workspace" || e.Name() == "steps" || e.Name() == "artifacts" {
					continue // the agent's own places, and the orchestrator's between steps
				}
				lines = append(lines, statLine(filepath.Join(p, e.Name())))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// statLine is "<what stat says>\t<path>": the path last, after a tab, so any path (spaces
// included) reads back whole.
func statLine(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return "absent\t" + p
	}
	if st.IsDir() {
		return fmt.Sprintf("dir %v\t%s", st.Mode(), p)
	}
	return fmt.Sprintf("%d %v %d\t%s", st.Size(), st.Mode(), st.ModTime().UnixNano(), p)
}

func statPath(line string) string {
	_, p, _ := strings.Cut(line, "\t")
	return p
}

// OutsideChanges implements loop.Workspace: the guarded paths that differ from the snapshot.
func (w workspace) OutsideChanges(ctx context.Context, snap loop.Snapshot) ([]string, error) {
	// Under the backlog lock no git-norma write is half done and the stamp is current.
	unlock, err := waitLock(ctx, backlogLockPath(w.root))
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := w.fingerprint()
	if now == snap.Outside {
		return nil, nil
	}
	before, after := lineSet(snap.Outside), lineSet(now)
	seen := map[string]bool{}
	var changed []string
	for _, set := range []map[string]bool{before, after} {
		for l := range set {
			if before[l] && after[l] {
				continue
			}
			rel, err := filepath.Rel(w.root, statPath(l))
			if err == nil && !seen[rel] {
				seen[rel] = true
				changed = append(changed, rel)
			}
		}
	}
	outsideRel, _ := filepath.Rel(w.root, backlogOutsidePath(w.root))
	// git-norma found the backlog changed by someone else while this step ran, before one of
	// its own writes (which would otherwise hide it: it rewrites the backlog and re-stamps it).
	changedOutside := seen[outsideRel]
	isBacklog := func(p string) bool {
		return p == outsideRel || p == ".beads" || strings.HasPrefix(p, ".beads"+string(filepath.Separator))
	}
	if backlogAsLeft(w.root) || changedOutside { // only git-norma's writes since, or reported below
		changed = slices.DeleteFunc(changed, isBacklog)
	}
	if changedOutside {
		changed = append(changed, ".beads")
	}
	sort.Strings(changed)
	return changed, nil
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
