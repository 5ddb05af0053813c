package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// controlDirs hold what only the user changes: git-norma's config (gates, sandbox mode, the
// worktree.setup and notify commands it runs unconfined) and the backlog (every task's
// Verify). Landed, a change there would let an agent lift its confinement or weaken checks.
var controlDirs = []string{".norma", ".beads"}

// controlPaths are controlDirs and the work tree's own control paths tree (treeControlOf).
func controlPaths(tree []string) []string {
	return append(slices.Clone(controlDirs), slices.DeleteFunc(slices.Clone(tree), func(p string) bool { return p == "" })...)
}

// controlChanges is ErrControlFiles naming the changes staged since head under
// controlPaths(tree), or nil. It only reads the index: it runs beside the commit.
func (w *Workspace) controlChanges(ctx context.Context, head string, tree []string) error {
	paths, err := controlDiff(ctx, w.git, tree, "--cached", head)
	if err != nil || len(paths) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s): only the user changes them", ErrControlFiles, strings.Join(paths, ", "))
}

// ControlChanges lists the paths under controlPaths that head changes since it forked from
// target (target...head). A landing refuses them however they got there: a remote's branch too.
func (m *Manager) ControlChanges(ctx context.Context, target, head string) ([]string, error) {
	return controlDiff(ctx, m.Git, treeControlOf(ctx, m.Git, m.Git.Dir), target+"..."+head)
}

// controlDiff lists the paths under controlPaths(tree) that `git diff args` changes.
func controlDiff(ctx context.Context, g git.Runner, tree []string, args ...string) ([]string, error) {
	args = append([]string{"diff", "--name-only", "--no-renames", "-z"}, args...)
	out, err := g.Output(ctx, append(append(args, "--"), controlPaths(tree)...)...)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(strings.Trim(out, "\x00"), "\x00"), nil
}

// treeControl is treeControlOf the workspace's repository, read once: it comes from the
// shared config, which no confined agent writes and the fallback guard restores.
func (w *Workspace) treeControl(ctx context.Context) []string {
	if w.control == nil {
		tree := treeControlOf(ctx, w.git, w.root)
		w.control = &tree
	}
	return *w.control
}

// treeControlOf are the paths of the work tree that only the user changes besides controlDirs:
// the directory a relative core.hooksPath names, and the files of the main worktree root that
// the repository's config includes (treeConfigsOf).
func treeControlOf(ctx context.Context, g git.Runner, root string) []string {
	return append(treeConfigsOf(ctx, g, root), treeHooksDirOf(ctx, g))
}

// treeConfigsOf are the files in the work tree at root that git reads as config, relative to
// root: one an include.path or includeIf.<condition>.path names (a tracked ../.gitconfig of
// shared aliases), and one git reads from elsewhere through a symbolic link into the tree (a
// dotfiles repository's ~/.gitconfig). Landed, a change there would set hooks, core.fsmonitor
// or filter drivers that the user's git runs outside any sandbox, as one of the hooks
// directory would.
func treeConfigsOf(ctx context.Context, g git.Runner, root string) []string {
	out, err := g.Output(ctx, "config", "--show-origin", "-z", "--list")
	if err != nil || root == "" {
		return nil
	}
	root = resolvedPath(root)
	home, _ := os.UserHomeDir()
	var files, paths []string
	// -z prints each setting as origin NUL key NEWLINE value NUL.
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, ok := strings.CutPrefix(fields[i], "file:")
		if !ok {
			continue
		}
		if !filepath.IsAbs(origin) {
			origin = filepath.Join(g.Dir, origin) // git names the repository's own config from the top
		}
		files = append(files, origin)
		key, value, _ := strings.Cut(fields[i+1], "\n")
		if key != "include.path" && !(strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")) || value == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(value, "~/"); ok && home != "" {
			value = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(value) {
			value = filepath.Join(filepath.Dir(origin), value) // as git resolves it
		}
		files = append(files, value) // named, whatever the condition, if it has no setting yet
	}
	for _, file := range slices.Compact(slices.Sorted(slices.Values(files))) {
		// The file as named (a link in the tree is changed as itself), and what it links to;
		// and each link on the way there (conf -> shared): made a directory, or pointed
		// elsewhere, it gives git another file.
		named := []string{filepath.Clean(file)}
		for d := filepath.Dir(named[0]); d != filepath.Dir(d); d = filepath.Dir(d) {
			if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				named = append(named, d)
			}
		}
		for _, p := range append(named, resolvedPath(file)) {
			p = filepath.Join(resolvedPath(filepath.Dir(p)), filepath.Base(p))
			rel, err := filepath.Rel(root, p)
			if rel = filepath.ToSlash(rel); err == nil && filepath.IsLocal(rel) && rel != ".git" && !strings.HasPrefix(rel, ".git/") && !slices.Contains(paths, rel) {
				paths = append(paths, rel)
			}
		}
	}
	return paths
}

// resolvedPath is path with its symbolic links resolved, or path as it is where that fails.
func resolvedPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
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
