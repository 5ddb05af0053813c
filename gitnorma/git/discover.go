package git

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Layout is where a work tree's repository lives, as `git rev-parse --path-format=absolute
// --git-common-dir --git-dir --show-toplevel` would print it.
type Layout struct {
	CommonDir string // the git directory shared by all worktrees
	GitDir    string // this worktree's git directory (CommonDir in the main worktree)
	TopLevel  string // this worktree's top-level directory
}

// Discover finds the repository of dir the way git does in the plain, everyday layouts —
// a .git directory, or a .git file pointing at a linked worktree's git directory — without
// starting git, which costs a couple of milliseconds every git-norma command would pay before
// doing anything. It answers only when git would certainly answer the same: anything git might
// treat differently (a bare repository or a git directory itself, core.worktree, config
// includes, per-worktree config, discovery settings from the environment, a directory owned
// by someone else, crossing a file system) returns ok=false, and the caller asks git.
func Discover(dir string) (l Layout, ok bool) {
	for _, v := range []string{"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		if os.Getenv(v) != "" {
			return Layout{}, false
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, false
	}
	// git works from getcwd(), the physical path: resolve symlinks the same way.
	d, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return Layout{}, false
	}
	start, ok := statOf(d)
	if !ok {
		return Layout{}, false
	}
	for {
		if st, ok := statOf(d); !ok || st.Dev != start.Dev {
			return Layout{}, false
		}
		dotGit := filepath.Join(d, ".git")
		fi, err := os.Lstat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			return layoutOf(d, dotGit)
		case err == nil && fi.Mode().IsRegular():
			gitDir, ok := readGitFile(d, dotGit)
			if !ok || !ownedByUs(dotGit) {
				return Layout{}, false
			}
			return layoutOf(d, gitDir)
		case err == nil || !os.IsNotExist(err):
			return Layout{}, false // a .git symlink or something unreadable: let git decide
		}
		if isGitDir(d, d) {
			return Layout{}, false // a bare repository, or inside a git directory
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Layout{}, false // not a repository: git says so in its own words
		}
		d = parent
	}
}

// layoutOf completes the layout of the work tree top whose git directory is gitDir.
func layoutOf(top, gitDir string) (Layout, bool) {
	gitDir, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return Layout{}, false
	}
	common, ok := commonDirOf(gitDir)
	if !ok {
		return Layout{}, false
	}
	if common, err = filepath.EvalSymlinks(common); err != nil {
		return Layout{}, false
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "config.worktree")); !os.IsNotExist(err) {
		return Layout{}, false
	}
	if !isGitDir(gitDir, common) || !ownedByUs(top) || !ownedByUs(gitDir) || !plainConfig(filepath.Join(common, "config")) {
		return Layout{}, false
	}
	return Layout{CommonDir: common, GitDir: gitDir, TopLevel: top}, true
}

// commonDirOf is the directory gitDir shares with the other worktrees: what its commondir file
// names (relative to gitDir), or gitDir itself.
func commonDirOf(gitDir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if os.IsNotExist(err) {
		return gitDir, true
	}
	if err != nil {
		return "", false
	}
	common := strings.TrimSpace(string(data))
	if !filepath.IsAbs(common) {
		common = filepath.Join(gitDir, common)
	}
	return common, true
}

// readGitFile reads a .git file ("gitdir: <path>", relative to the file's directory).
func readGitFile(top, path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	target, found := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if !found || target == "" || strings.ContainsAny(target, "\n") {
		return "", false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(top, target)
	}
	return target, true
}

// isGitDir is git's own test for a git directory: a valid HEAD (a symbolic ref under refs/, or
// an object id), and objects/ and refs/ in the common directory (a linked worktree's git
// directory has neither of its own). git walks on past a directory that fails it, so anything
// short of valid is left to git.
func isGitDir(gitDir, common string) bool {
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return false
	}
	h := strings.TrimSpace(string(head))
	if ref, symbolic := strings.CutPrefix(h, "ref: "); symbolic {
		if !strings.HasPrefix(ref, "refs/") {
			return false
		}
	} else if !isObjectID(h) {
		return false
	}
	for _, p := range []string{filepath.Join(common, "objects"), filepath.Join(common, "refs")} {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// plainConfig says whether a repository config is free of what changes discovery or what git
// might refuse: no core.worktree (nor extensions.worktreeConfig), no core.bare = true, no
// includes, no extensions at all. Anything it cannot read counts as not plain.
func plainConfig(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.ToLower(strings.TrimSpace(sc.Text()))
		if strings.Contains(line, "worktree") || strings.HasPrefix(line, "[include") || strings.HasPrefix(line, "[extensions") {
			return false
		}
		if strings.HasPrefix(line, "[") { // a key may follow the section header on its line
			_, rest, found := strings.Cut(line, "]")
			if !found {
				return false
			}
			line = strings.TrimSpace(rest)
		}
		if key, value, found := strings.Cut(line, "="); found && strings.TrimSpace(key) == "bare" &&
			strings.TrimSpace(value) != "false" {
			return false
		}
		if line == "bare" { // a key without a value means true
			return false
		}
	}
	return sc.Err() == nil
}

func statOf(path string) (*syscall.Stat_t, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// ownedByUs mirrors git's safe.directory ownership check closely enough to never answer where
// git would refuse: anything not owned by the effective user is left to git.
func ownedByUs(path string) bool {
	st, ok := statOf(path)
	return ok && int(st.Uid) == os.Geteuid()
}
