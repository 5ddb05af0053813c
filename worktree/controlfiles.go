package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// controlDirs hold what only the user changes: git-norma's config (gates, sandbox mode, the
// worktree.setup and notify commands it runs unconfined) and the backlog (every task's
// Verify). Landed, a change there would let an agent lift its confinement or weaken checks.
var controlDirs = []string{".norma", ".beads"}

// controlPaths are controlDirs and the work tree's hooks directory hooks ("": none).
func controlPaths(hooks string) []string {
	if hooks == "" {
		return controlDirs
	}
	return append(slices.Clone(controlDirs), hooks)
}

// controlChanges is ErrControlFiles naming the changes staged since head under
// controlPaths(hooks), or nil. It only reads the index: it runs beside the commit.
func (w *Workspace) controlChanges(ctx context.Context, head, hooks string) error {
	paths, err := controlDiff(ctx, w.git, hooks, "--cached", head)
	if err != nil || len(paths) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s): only the user changes them", ErrControlFiles, strings.Join(paths, ", "))
}

// ControlChanges lists the paths under controlPaths that head changes since it forked from
// target (target...head). A landing refuses them however they got there: a remote's branch too.
func (m *Manager) ControlChanges(ctx context.Context, target, head string) ([]string, error) {
	return controlDiff(ctx, m.Git, treeHooksDirOf(ctx, m.Git), target+"..."+head)
}

// controlDiff lists the paths under controlPaths(hooks) that `git diff args` changes.
func controlDiff(ctx context.Context, g git.Runner, hooks string, args ...string) ([]string, error) {
	args = append([]string{"diff", "--name-only", "--no-renames", "-z"}, args...)
	out, err := g.Output(ctx, append(append(args, "--"), controlPaths(hooks)...)...)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(strings.Trim(out, "\x00"), "\x00"), nil
}

// treeHooksDir is the work-tree directory a relative core.hooksPath names (husky's ".husky/_":
// ".husky", its scripts), or "": git commands in your checkout run them, the landing's first.
func (w *Workspace) treeHooksDir(ctx context.Context) string {
	if w.hooksDir == nil {
		dir := treeHooksDirOf(ctx, w.git)
		w.hooksDir = &dir
	}
	return *w.hooksDir
}

// treeHooksDirOf is the work-tree hooks directory (see treeHooksDir) of the repository g runs in.
func treeHooksDirOf(ctx context.Context, g git.Runner) string {
	g.NoHooks = false // which would answer its own /dev/null
	path, err := g.Output(ctx, "config", "--get", "core.hooksPath")
	path = filepath.ToSlash(filepath.Clean(strings.TrimSpace(path)))
	if err != nil || path == "." || filepath.IsAbs(path) || strings.HasPrefix(path, "~") || strings.HasPrefix(path, "../") {
		return ""
	}
	if dir, base := filepath.Split(path); base == "_" && dir != "" {
		return strings.TrimSuffix(dir, "/")
	}
	return path
}
