// Package git is git-norma's one way of running the git binary.
//
// go-git v5 has no linked worktrees, no notes and no real merges, so everything that changes a
// repository goes through the git binary, and always through this runner: every call gets a
// context, a clean environment (hooks export GIT_DIR, GIT_INDEX_FILE and friends, which would
// point a command at the wrong repository) and typed errors carrying git's exit code and stderr.
//
// Two read-only questions every status-like command asks — where is the repository, which task
// branches exist — are answered from git's files in the plain layouts (discover.go, refs.go),
// because starting git is most of such a command's cost; anything unusual is still asked of git.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Runner runs git in one directory. The zero value runs in the current directory.
type Runner struct {
	// Dir is the directory git runs in (passed as cmd.Dir, never via os.Chdir).
	Dir string
	// Env is appended to the cleaned process environment.
	Env []string
	// NoHooks runs git with no hooks at all (core.hooksPath=/dev/null): for work trees an
	// agent wrote, where a relative core.hooksPath (.husky/_, .githooks) names hook files the
	// agent may have written, which git-norma's own commit or checkout would run unconfined.
	// Nor does git run itself in a nested repository there (diff.ignoreSubmodules=dirty:
	// submodule commits count, their work trees are not asked), whose config (core.fsmonitor,
	// filters) is the agent's too; core.fsmonitor is off, and a checkout or reset never
	// recurses into one (the user's submodule.recurse would run git, and the filters of the
	// nested repository's config, there).
	NoHooks bool
	// Confine, when set, starts the commands that may run filter drivers on the work tree
	// (see filtering) through it. The drivers are the user's (git-lfs, git-crypt, ...), but on
	// a work tree an agent wrote, its .gitattributes chooses the files they get and, with
	// git-lfs, its .lfsconfig the server they talk to.
	Confine Wrap
}

// Wrap runs a git command some other way: through the sandbox launcher, which confines it and
// everything it starts. It returns as cmd.Run would (a non-zero exit: an error with an
// ExitCode method).
type Wrap func(ctx context.Context, cmd *exec.Cmd) error

// filtering are the git commands that may run filter drivers on work-tree files: clean where
// they hash files (add, status, and the index refresh of any command that writes the index),
// smudge where they write them (checkout, reset --hard, read-tree -u).
var filtering = map[string]bool{
	"add": true, "checkout": true, "cherry-pick": true, "commit": true, "merge": true, "read-tree": true, "rebase": true,
	"reset": true, "restore": true, "stash": true, "status": true, "switch": true, "update-index": true,
	"write-tree": true, // writing the index, it hashes racily clean files again
}

// askingCommands are the git commands that may ask the user something on the terminal: those
// that talk to a remote (ssh's passphrase, a credential helper), and those that make commits,
// which commit.gpgSign signs (ssh-keygen asks for a key's passphrase). They stay in
// git-norma's process group, the terminal's foreground, where a read does not stop them.
var askingCommands = map[string]bool{"fetch": true, "push": true, "ls-remote": true, "pull": true, "clone": true, "remote": true, "submodule": true,
	"commit": true, "commit-tree": true}

// subcommand is the git command args run: the first argument that is neither an option nor
// the value of a -c.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-c":
			i++
		case !strings.HasPrefix(args[i], "-"):
			return args[i]
		}
	}
	return ""
}

// Error is a git command that exited non-zero or could not start.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
	Err      error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCodeOf returns git's exit code when err is an *Error, else -1.
func ExitCodeOf(err error) int {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// StderrOf returns what git printed on stderr when err is an *Error, else "".
func StderrOf(err error) string {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Stderr
	}
	return ""
}

// In returns a runner for another directory with the same extra environment.
func (r Runner) In(dir string) Runner {
	return Runner{Dir: dir, Env: r.Env, NoHooks: r.NoHooks}
}

// Pinned returns a runner for the work tree dir whose git directory is gitDir, named to git
// through GIT_DIR and GIT_WORK_TREE: git then never looks for the repository itself. Left to
// look, git reads dir/.git, and where that file is gone it walks up the directories above — a
// linked worktree inside another checkout would send the command to that checkout's
// repository, index and branch. It runs no hooks (see NoHooks): the work tree is an agent's.
func (r Runner) Pinned(gitDir, dir string) Runner {
	env := append(append([]string{}, r.Env...), "GIT_DIR="+gitDir, "GIT_WORK_TREE="+dir)
	return Runner{Dir: dir, Env: env, NoHooks: true}
}

// Output runs git and returns its stdout with the trailing newline trimmed. The output is
// returned even when git fails: some commands (merge-tree) report details on stdout with a
// non-zero exit.
func (r Runner) Output(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(ctx, r, nil, &out, nil, args)
	return strings.TrimRight(out.String(), "\n"), err
}

// Run runs git and discards its stdout.
func (r Runner) Run(ctx context.Context, args ...string) error {
	return run(ctx, r, nil, io.Discard, nil, args)
}

// OutputAndStderr is Output with what git said on stderr, which some commands use for
// warnings they do not fail on.
func (r Runner) OutputAndStderr(ctx context.Context, args ...string) (string, string, error) {
	var out, warnings bytes.Buffer
	err := run(ctx, r, nil, &out, &warnings, args)
	return strings.TrimRight(out.String(), "\n"), warnings.String(), err
}

// Input runs git with stdin and returns its trimmed stdout.
func (r Runner) Input(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	var out bytes.Buffer
	if err := run(ctx, r, stdin, &out, nil, args); err != nil {
		return "", err
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// Stream runs git with its stdout written to w (for outputs too large to hold in memory).
func (r Runner) Stream(ctx context.Context, w io.Writer, args ...string) error {
	return run(ctx, r, nil, w, nil, args)
}

// killedWait bounds how long a killed git's output may stay open (exec.Cmd.WaitDelay).
const killedWait = 2 * time.Second

// run runs git as r says; its stderr goes into the error, and to stderrCopy when that is not nil.
func run(ctx context.Context, r Runner, stdin io.Reader, stdout, stderrCopy io.Writer, args []string) error {
	argv := args
	if r.NoHooks {
		argv = append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
			"-c", "diff.ignoreSubmodules=dirty", "-c", "submodule.recurse=false"}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = r.Dir
	cmd.Env = append(CleanEnv(os.Environ()), r.Env...)
	cmd.Stdin = stdin
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stderrCopy != nil {
		cmd.Stderr = io.MultiWriter(&stderr, stderrCopy)
	}
	// Once git is killed (the context ended), a process it started that still holds its
	// output (a push's receive-pack or ssh) must not keep this call waiting.
	cmd.WaitDelay = killedWait
	var err error
	if r.Confine != nil && filtering[subcommand(args)] {
		err = r.Confine(ctx, cmd)
	} else {
		if !askingCommands[subcommand(args)] {
			// A group of its own: the terminal's Ctrl-C goes to its whole foreground group,
			// and git-norma, which finishes what it records (a landing) before it exits,
			// must not have its git killed halfway. Not git that may ask on the terminal:
			// only the foreground group reads it (a background read stops the process).
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		}
		err = cmd.Run()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ge := &Error{Args: args, ExitCode: -1, Stderr: stderr.String(), Err: err}
	var exit interface{ ExitCode() int }
	if errors.As(err, &exit) {
		ge.ExitCode = exit.ExitCode()
	} else if errors.Is(err, exec.ErrNotFound) {
		ge.Stderr = "the git binary was not found on PATH; install git 2.38 or newer"
	}
	return ge
}

// repoLocalVars are the variables git exports to hooks and aliases that pin a command to one
// repository, index or object store (git rev-parse --local-env-vars, minus the -c config ones,
// which carry the user's own `git -c` settings and are kept).
var repoLocalVars = map[string]bool{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_CONFIG":                       true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_IMPLICIT_WORK_TREE":           true,
	"GIT_GRAFT_FILE":                   true,
	"GIT_INDEX_FILE":                   true,
	"GIT_NO_REPLACE_OBJECTS":           true,
	"GIT_REPLACE_REF_BASE":             true,
	"GIT_PREFIX":                       true,
	"GIT_INTERNAL_SUPER_PREFIX":        true,
	"GIT_SHALLOW_FILE":                 true,
	"GIT_COMMON_DIR":                   true,
	"GIT_NAMESPACE":                    true,
	"GIT_QUARANTINE_PATH":              true,
}

// StripRepoVars returns env without the repository-pinning variables that hooks inherit, so
// a process started from a hook works on the repository of its own directory.
func StripRepoVars(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return repoLocalVars[name]
	})
}

// CleanEnv is StripRepoVars plus what git-norma's own git calls need: no prompts, no editor,
// and messages in the C locale (some of them are parsed).
func CleanEnv(env []string) []string {
	kept := slices.DeleteFunc(StripRepoVars(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "LC_ALL" || name == "GIT_TERMINAL_PROMPT" || name == "GIT_EDITOR" || name == "GIT_NO_REPLACE_OBJECTS"
	})
	// Replace refs (git replace) make git read one commit as another: one an agent made would
	// have git-norma build a landing on content no task made. git-norma reads the objects.
	return append(kept, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=:", "GIT_NO_REPLACE_OBJECTS=1")
}
