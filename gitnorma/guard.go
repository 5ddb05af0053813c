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
	return []string{
		filepath.Join(w.root, ".norma", "config.json"),
		w.runDir,
		filepath.Join(w.runDir, "norma.md"),
	}
}

// fingerprint is one line per guarded path (and per entry of a guarded directory), and the
// backlog's lines: name, size, mode and modification time.
func (w workspace) fingerprint() string {
	lines := backlogFingerprint(w.root)
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

func statLine(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return p + " absent"
	}
	if st.IsDir() {
		return fmt.Sprintf("%s dir %v", p, st.Mode())
	}
	return fmt.Sprintf("%s %d %v %d", p, st.Size(), st.Mode(), st.ModTime().UnixNano())
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
			rel, err := filepath.Rel(w.root, strings.Fields(l)[0])
			if err == nil && !seen[rel] {
				seen[rel] = true
				changed = append(changed, rel)
			}
		}
	}
	if backlogAsLeft(w.root) { // git-norma changed it (another run, a task added), not the agent
		changed = slices.DeleteFunc(changed, func(p string) bool {
			return p == ".beads" || strings.HasPrefix(p, ".beads"+string(filepath.Separator))
		})
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
