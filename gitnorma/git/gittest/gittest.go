// Package gittest builds real git repositories in temporary directories for package tests.
package gittest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Repo is a real repository on disk with a configured identity.
type Repo struct {
	t   testing.TB
	Dir string
	Git git.Runner
}

// NewRepo creates a repository on branch main with one commit (README.md), isolated from the
// user's global and system git configuration.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	Isolate(t)
	dir := t.TempDir()
	r := &Repo{t: t, Dir: dir, Git: git.Runner{Dir: dir}}
	r.Must("init", "-q", "-b", "main")
	r.Must("config", "user.name", "Test User")
	r.Must("config", "user.email", "test@example.com")
	r.WriteFile("README.md", "# test\n")
	r.Commit("initial commit")
	return r
}

// Open wraps an existing repository directory (a clone, a linked worktree) for tests.
func Open(t testing.TB, dir string) *Repo {
	return &Repo{t: t, Dir: dir, Git: git.Runner{Dir: dir}}
}

// Isolate points HOME at an empty directory and disables the system config, so tests never
// read or write the developer's git configuration.
func Isolate(t testing.TB) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_DATE", "")
	t.Setenv("GIT_COMMITTER_DATE", "")
}

// Must runs git in the repository and fails the test on error.
func (r *Repo) Must(args ...string) string {
	r.t.Helper()
	out, err := r.Git.Output(context.Background(), args...)
	if err != nil {
		r.t.Fatalf("%v", err)
	}
	return out
}

// WriteFile writes a file relative to the repository root, creating parent directories.
func (r *Repo) WriteFile(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// Commit stages everything and commits it, returning the new commit id.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Must("add", "-A")
	r.Must("commit", "-q", "--allow-empty", "-m", msg)
	return r.Must("rev-parse", "HEAD")
}

// Stderr runs git in the repository as a user would (the test's environment: its PATH, hooks
// and all), fails the test on error, and returns what git wrote to stderr: its warnings, and
// what hooks said.
func (r *Repo) Stderr(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("git %v: %v: %s", args, err, stderr.String())
	}
	return stderr.String()
}
