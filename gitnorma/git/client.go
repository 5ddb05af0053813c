package git

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The questions and changes the application asks of git, one method each, so that no git
// argv is built outside this package (worktree and notes keep their own). Each returns what
// git printed, trimmed, and git's error as it is: callers decide what a missing ref means.

// ResolveCommit is the commit rev names (rev-parse --verify rev^{commit}).
func (r Runner) ResolveCommit(ctx context.Context, rev string) (string, error) {
	return r.Output(ctx, "rev-parse", "--verify", "-q", rev+"^{commit}")
}

// Resolve is the object rev names, a ref or a commit id (rev-parse --verify rev).
func (r Runner) Resolve(ctx context.Context, rev string) (string, error) {
	return r.Output(ctx, "rev-parse", "--verify", "-q", rev)
}

// ResolveAll is the object each ref names, in order, in one git call; it fails if any does
// not exist.
func (r Runner) ResolveAll(ctx context.Context, refs ...string) ([]string, error) {
	out, err := r.Output(ctx, append(append([]string{"rev-parse"}, refs...), "--")...)
	if err != nil {
		return nil, err
	}
	return strings.Fields(strings.TrimSuffix(out, "--")), nil // git echoes the "--" last
}

// ShortID is the abbreviated id of the commit rev names.
func (r Runner) ShortID(ctx context.Context, rev string) (string, error) {
	return r.Output(ctx, "rev-parse", "--short", rev)
}

// HasCommit says whether the object database has commit id.
func (r Runner) HasCommit(ctx context.Context, id string) bool {
	return r.Run(ctx, "cat-file", "-e", id+"^{commit}") == nil
}

// CurrentBranch is the short name of the branch HEAD is on; an error when HEAD is detached.
func (r Runner) CurrentBranch(ctx context.Context) (string, error) {
	return r.Output(ctx, "symbolic-ref", "-q", "--short", "HEAD")
}

// SymbolicRef is the full name of the ref the symbolic ref name points at (HEAD: the branch
// it is on); an error when name is not a symbolic ref (a detached HEAD).
func (r Runner) SymbolicRef(ctx context.Context, name string) (string, error) {
	return r.Output(ctx, "symbolic-ref", "-q", name)
}

// ValidBranchName says whether name may name a branch (check-ref-format --branch).
func (r Runner) ValidBranchName(ctx context.Context, name string) error {
	return r.Run(ctx, "check-ref-format", "--branch", name)
}

// GitPath is the absolute path git uses for name in the git directory (hooks, MERGE_HEAD),
// core.hooksPath and linked worktrees taken into account.
func (r Runner) GitPath(ctx context.Context, name string) (string, error) {
	return r.Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", name)
}

// Config is the value of key in the repository's configuration; an error when unset.
func (r Runner) Config(ctx context.Context, key string) (string, error) {
	return r.Output(ctx, "config", "--get", key)
}

// ConfigMatching is every setting whose key matches the regular expression pattern, one a
// line, "key value" (config --get-regexp; exit code 1 when none matches).
func (r Runner) ConfigMatching(ctx context.Context, pattern string) (string, error) {
	return r.Output(ctx, "config", "--get-regexp", pattern)
}

// RemoteURLs are the URLs git fetches from and pushes to for the remote name, as
// url.<base>.insteadOf and pushInsteadOf rewrite them. (A function, not a method: Runner keeps
// to 40.)
func RemoteURLs(ctx context.Context, r Runner, name string) ([]string, error) {
	var urls []string
	for _, args := range [][]string{{"--all"}, {"--all", "--push"}} {
		out, err := r.Output(ctx, append(append([]string{"remote", "get-url"}, args...), "--", name)...)
		if err != nil {
			return nil, err
		}
		urls = append(urls, strings.Split(out, "\n")...)
	}
	return urls, nil
}

// ConfigFiles are the files the settings in force come from, includes followed, one entry per
// setting in the order git reads them (config --includes --list --show-origin).
func (r Runner) ConfigFiles(ctx context.Context) ([]string, error) {
	out, err := r.Output(ctx, "config", "--includes", "--list", "--show-origin", "-z")
	if err != nil {
		return nil, err
	}
	var files []string
	// -z prints each setting as origin NUL key NEWLINE value NUL.
	for i, field := range strings.Split(out, "\x00") {
		if path, ok := strings.CutPrefix(field, "file:"); i%2 == 0 && ok && path != "" {
			files = append(files, path)
		}
	}
	return files, nil
}

// ConfigAll is every value of a multi-valued key, one a line.
func (r Runner) ConfigAll(ctx context.Context, key string) (string, error) {
	return r.Output(ctx, "config", "--get-all", key)
}

// ConfigFile is one git config file, edited key by key through git config --file: every
// other setting in it, and its layout, stay as they were.
type ConfigFile struct {
	Git  Runner
	Path string
}

// Unset removes every value of key.
func (f ConfigFile) Unset(ctx context.Context, key string) error {
	_, err := f.Git.Output(ctx, "config", "--file", f.Path, "--unset-all", key)
	return err
}

// Add adds a value of key.
func (f ConfigFile) Add(ctx context.Context, key, value string) error {
	_, err := f.Git.Output(ctx, "config", "--file", f.Path, "--add", key, value)
	return err
}

// ConfigEntry is one setting of a config file: its canonical key (section and name
// lowercased, a subsection as written) and its value ("true" for a key written without one).
type ConfigEntry struct {
	Key, Value string
}

// ParseConfig reads the text of a config file as git does — git parses it (`git config
// --file - --list -z`), so no second reading of its syntax can disagree — and returns its
// settings in order. Includes are not followed. git runs outside any repository: the text may
// be what was the repository's config, now a pipe or a directory git would stop at.
func (r Runner) ParseConfig(ctx context.Context, text []byte) ([]ConfigEntry, error) {
	out, err := r.In("/").Input(ctx, bytes.NewReader(text), "config", "--file", "-", "--list", "-z")
	if err != nil {
		return nil, err
	}
	var entries []ConfigEntry
	for _, item := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		if item == "" {
			continue
		}
		key, value, hasValue := strings.Cut(item, "\n")
		if !hasValue {
			value = "true"
		}
		entries = append(entries, ConfigEntry{Key: key, Value: value})
	}
	return entries, nil
}

// Var is git's logical variable name (git var), such as GIT_COMMITTER_IDENT.
func (r Runner) Var(ctx context.Context, name string) (string, error) {
	return r.Output(ctx, "var", name)
}

// Version is `git version`'s line.
func (r Runner) Version(ctx context.Context) (string, error) {
	return r.Output(ctx, "version")
}

// The oldest git git-norma supports: 2.38 added `git merge-tree --write-tree`, which landing
// uses to merge without touching any checkout.
const minMajor, minMinor = 2, 38

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`git version (\d+)\.(\d+)`) })

// CheckVersion fails when git is older than the supported minimum.
func (r Runner) CheckVersion(ctx context.Context) error {
	out, err := r.Version(ctx)
	if err != nil {
		return err
	}
	m := versionRE().FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("cannot read the git version from %q", out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < minMajor || major == minMajor && minor < minMinor {
		return fmt.Errorf("git %d.%d is too old: git-norma needs git %d.%d or newer (for `git merge-tree --write-tree`); upgrade git and try again",
			major, minor, minMajor, minMinor)
	}
	return nil
}

// UpdateRef moves ref to newID, only if it is at oldID now (all zeros: only if it does not
// exist; "": whatever it is at). msg, if any, goes into the reflog. A ref that is a symbolic
// one is replaced, never followed: what git-norma moves is the ref it names, not one a
// symbolic ref (an agent's, say) would point it at.
func (r Runner) UpdateRef(ctx context.Context, ref, newID, oldID, msg string) error {
	args := []string{"update-ref", "--no-deref"}
	if msg != "" {
		args = append(args, "-m", msg)
	}
	args = append(args, ref, newID)
	if oldID != "" {
		args = append(args, oldID)
	}
	return r.Run(ctx, args...)
}

// DeleteRef deletes ref, only if it is at oldID now ("": whatever it is at); a symbolic ref
// itself, never the ref it points at.
func (r Runner) DeleteRef(ctx context.Context, ref, oldID string) error {
	args := []string{"update-ref", "--no-deref", "-d", ref}
	if oldID != "" {
		args = append(args, oldID)
	}
	return r.Run(ctx, args...)
}

// DeleteBranch deletes a branch whatever it holds (branch -D).
func (r Runner) DeleteBranch(ctx context.Context, branch string) error {
	return r.Run(ctx, "branch", "-D", "--", branch)
}

// ForEachRef prints format for each ref matching the patterns, one a line.
func (r Runner) ForEachRef(ctx context.Context, format string, patterns ...string) (string, error) {
	return r.Output(ctx, append([]string{"for-each-ref", "--format=" + format}, patterns...)...)
}

// RemoteHeads asks remote where the branches named are (every branch when none is): branch
// name → commit id, without the ones it lacks.
func (r Runner) RemoteHeads(ctx context.Context, remote string, branches ...string) (map[string]string, error) {
	args := []string{"ls-remote", "--heads", remote}
	for _, b := range branches {
		args = append(args, "refs/heads/"+b)
	}
	out, err := r.Output(ctx, args...)
	if err != nil {
		return nil, err
	}
	heads := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		// ls-remote matches the patterns at the end of a name: refs/heads/x/main for main too.
		if id, ref, ok := strings.Cut(line, "\t"); ok && strings.HasPrefix(ref, "refs/heads/") {
			heads[strings.TrimPrefix(ref, "refs/heads/")] = id
		}
	}
	return heads, nil
}

// StagedChanges says whether the index differs from HEAD.
func (r Runner) StagedChanges(ctx context.Context) (bool, error) {
	err := r.Run(ctx, "diff", "--cached", "--quiet")
	if ExitCodeOf(err) == 1 {
		return true, nil
	}
	return false, err
}

// TrackedChanges is `git status --porcelain` for tracked files only: empty when clean.
func (r Runner) TrackedChanges(ctx context.Context) (string, error) {
	return r.Output(ctx, "status", "--porcelain", "--untracked-files=no")
}

// IndexEntries is `ls-files -s -z`: mode, object id, stage and path of every index entry.
func (r Runner) IndexEntries(ctx context.Context) (string, error) {
	return r.Output(ctx, "ls-files", "-s", "-z")
}

// Where is git's account of the repository a directory is in: its layout (TopLevel "" outside a
// work tree), whether it is bare, and whether the directory is in a work tree.
type Where struct {
	Layout
	Bare, InWorkTree bool
}

// Where asks git where the repository of the runner's directory is, in one process:
// --show-toplevel fails outside a work tree, and only then is the question asked again
// without it.
func (r Runner) Where(ctx context.Context) (Where, error) {
	args := []string{"rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir", "--is-bare-repository", "--is-inside-work-tree"}
	out, err := r.Output(ctx, append(args, "--show-toplevel")...)
	if err != nil {
		out, err = r.Output(ctx, args...)
	}
	if err != nil {
		return Where{}, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 {
		return Where{}, fmt.Errorf("unexpected output from git rev-parse: %q", out)
	}
	w := Where{Layout: Layout{CommonDir: lines[0], GitDir: lines[1]}, Bare: lines[2] == "true", InWorkTree: lines[3] == "true"}
	if len(lines) > 4 {
		w.TopLevel = lines[4]
	}
	return w, nil
}

// ColorBool is git's answer to whether output should be coloured by the setting name (and
// color.ui after it), for output that goes to a terminal when tty.
func (r Runner) ColorBool(ctx context.Context, name string, tty bool) (bool, error) {
	out, err := r.Output(ctx, "config", "--get-colorbool", name, strconv.FormatBool(tty))
	return out == "true", err
}

// CommitTree is the tree id of commit, asked of git (never read from the object files: what
// decides a landing is not parsed by hand from a directory an unconfined agent could write).
func (r Runner) CommitTree(ctx context.Context, commit string) (string, error) {
	tree, err := r.Output(ctx, "rev-parse", "--verify", "-q", commit+"^{commit}^{tree}")
	if err != nil {
		return "", fmt.Errorf("read the tree of %.10s: %w", commit, err)
	}
	return tree, nil
}
