package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// IncludeFile names, at the repository root, the ignored files (gitignore patterns: .env)
// copied from the main checkout into each new workspace and check worktree.
const IncludeFile = ".worktreeinclude"

// Setup prepares a new worktree (config worktree.setup and .worktreeinclude).
type Setup struct {
	// Root is the main checkout, where .worktreeinclude and the files it names are.
	Root string
	// Commands are argv commands run in the new worktree, in order, once.
	Commands [][]string
	// Log receives the commands' output (nil: discarded).
	Log io.Writer
	// Env is added to the commands' environment.
	Env []string
	// Confine, when set, runs a setup command as cmd.Run would, confined: the worktree holds
	// an agent's commit, so project code it runs (npm ci's scripts) is the agent's.
	Confine func(ctx context.Context, cmd *exec.Cmd) error
}

// SetUp copies the ignored files .worktreeinclude names into dir, then runs the setup
// commands there. Without either it costs one stat.
func (m *Manager) SetUp(ctx context.Context, dir string, s Setup) error {
	if s.Root != "" {
		if err := m.copyIncluded(ctx, dir, s.Root); err != nil {
			return fmt.Errorf("copy the files %s names into %s: %w", IncludeFile, dir, err)
		}
	}
	for _, argv := range s.Commands {
		if err := runSetup(ctx, dir, argv, s); err != nil {
			return err
		}
	}
	return nil
}

func runSetup(ctx context.Context, dir string, argv []string, s Setup) error {
	if len(argv) == 0 {
		return errors.New("worktree.setup has an empty command")
	}
	var tail bytes.Buffer
	w := io.Writer(&tail)
	if s.Log != nil {
		w = io.MultiWriter(s.Log, &tail)
		fmt.Fprintf(s.Log, "==> worktree.setup: %s\n", strings.Join(argv, " "))
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = append(git.StripRepoVars(os.Environ()), s.Env...)
	run := cmd.Run
	if s.Confine != nil {
		run = func() error { return s.Confine(ctx, cmd) }
	}
	if err := run(); err != nil {
		out := strings.TrimSpace(tail.String())
		if len(out) > 500 {
			out = "..." + out[len(out)-500:]
		}
		return fmt.Errorf("worktree.setup command %q failed in %s: %w; its output: %s (fix the command in .norma/config.json, or remove it)", argv, dir, err, out)
	}
	return nil
}

// copyIncluded copies into dir the untracked files of root that match .worktreeinclude and are
// ignored by git: only ignored files, so that nothing copied is ever committed by a step.
func (m *Manager) copyIncluded(ctx context.Context, dir, root string) error {
	include := filepath.Join(root, IncludeFile)
	if _, err := os.Stat(include); os.IsNotExist(err) {
		return nil
	}
	g := m.Git.In(root)
	// The untracked files that match the patterns (and only those patterns)...
	matched, err := g.Output(ctx, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+include)
	if err != nil || matched == "" {
		return err
	}
	// ...that git ignores: check-ignore names the ones its own rules ignore.
	ignored, err := g.Input(ctx, strings.NewReader(matched), "check-ignore", "-z", "--stdin")
	if git.ExitCodeOf(err) == 1 {
		return nil // none of them is ignored
	} else if err != nil {
		return err
	}
	for _, rel := range strings.Split(ignored, "\x00") {
		if rel == "" || rel == ".norma" || strings.HasPrefix(rel, ".norma/") {
			continue // git-norma's own state is never copied
		}
		if !realDirs(dir, filepath.Dir(rel)) {
			continue // the worktree's tree put something else there: never write through it
		}
		if err := copyFile(filepath.Join(root, rel), filepath.Join(dir, rel)); err != nil {
			return err
		}
	}
	return nil
}

// realDirs says whether each existing component of rel (a slash path in dir) is a directory,
// not a symlink, which an agent's commit could make to send the user's file anywhere.
func realDirs(dir, rel string) bool {
	p := dir
	for _, name := range strings.Split(filepath.ToSlash(rel), "/") {
		if name == "." || name == "" {
			continue
		}
		p = filepath.Join(p, name)
		st, err := os.Lstat(p)
		if os.IsNotExist(err) {
			return true // made below by MkdirAll, as plain directories
		}
		if err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// copyFile copies a regular file (with its mode) or a symlink; never over an existing one.
func copyFile(from, to string) error {
	st, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		link, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(link, to)
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, st.Mode().Perm())
}
