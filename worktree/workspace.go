package worktree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Workspace is one run's worktree on its task branch.
type Workspace struct {
	dir string
	// gitDir is the agent's git directory of the worktree: its HEAD, index, locks (owngit.go).
	gitDir string
	// ownDir is git-norma's own git directory for it; rec, its record of gitDir (runadmin.go).
	ownDir string
	rec    record
	// common is the repository's common git directory, which gitDir/commondir must name.
	common string
	// worktreeConfig is gitDir/config.worktree as git made it (nil: none): git reads it under
	// extensions.worktreeConfig, so an agent could set filters, fsmonitor, hooks there.
	worktreeConfig []byte
	branch         string
	taskID         string
	runID          string
	// base is where the task branch forks from the target; patch sizes are measured from it.
	base string
	git  git.Runner
	// settled is the state the last settling read, for the next State (see there).
	settled *State
	// root is the main worktree's root, where the files the config includes are (treeControl).
	root string
	// control is treeControl's answer, read once.
	control *[]string
	// patch is the last patch size measured, and its head.
	patch struct {
		head  string
		bytes int64
	}
	// CaughtUp is what bringing the existing branch up to date with the target did.
	CaughtUp CatchUp
	// Started: this run created the task branch from the target, or restarted it after a
	// conflict; it holds nothing of the target's history beyond Base.
	Started bool
}

// Dir is the worktree's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// GitDir is the agent's git directory of the worktree (<common>/worktrees/<name>), its HEAD
// and index; git-norma's own git uses another (owngit.go).
func (w *Workspace) GitDir() string { return w.gitDir }

// Branch is the task branch checked out in the worktree.
func (w *Workspace) Branch() string { return w.branch }

// Base is the commit the task branch forked from.
func (w *Workspace) Base() string { return w.base }

// State is a point-in-time view of the worktree: HEAD and a hash of `git status`.
type State struct {
	Head   string
	Status string
}

// ErrBranchSwitched and ErrHistoryRewritten are agent faults found after a writing step.
var (
	ErrBranchSwitched   = errors.New("the workspace is no longer on its task branch")
	ErrHistoryRewritten = errors.New("the task branch history was rewritten")
	ErrLinkChanged      = errors.New("the worktree's git directory was rewritten (restored): commondir, gitdir, locked or config.worktree")
	ErrControlFiles     = errors.New("the step changed git-norma's config, the backlog or the hooks")
	// ErrUnaddable: git cannot add what the step left, such as a nested repository without
	// a commit (git init lib): git-norma's index is its own, so it is what is in the files.
	ErrUnaddable = errors.New("git cannot add what the step left in the worktree")
)

// State reads HEAD and the status fingerprint; right after a settling (Changes, a Commit that
// committed nothing) it is what that read: only git-norma runs between, touching nothing.
func (w *Workspace) State(ctx context.Context) (State, error) {
	if s := w.settled; s != nil {
		w.settled = nil
		return *s, nil
	}
	v, err := w.read(ctx)
	return v.state, err
}

// Head reads HEAD alone, before a step whose changes are committed rather than compared
// (Commit needs where it started, not what was uncommitted then).
func (w *Workspace) Head(ctx context.Context) (string, error) {
	if _, err := w.relinkCommon(); err != nil {
		return "", err
	}
	return w.headCommit(ctx)
}

// view is the worktree as one `git status` sees it.
type view struct {
	state State
	// branch is the checked-out branch's full ref ("" when HEAD is detached).
	branch string
	// paths are the changed paths (a rename's both sides).
	paths []string
}

// read is one git process: porcelain v2 with --branch gives HEAD, the branch and the changed
// paths.
func (w *Workspace) read(ctx context.Context) (view, error) {
	if _, err := w.relinkCommon(); err != nil {
		return view{}, err
	}
	out, err := w.status(ctx, "--porcelain=v2", "--branch")
	if err != nil {
		return view{}, err
	}
	var v view
	var entries []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "":
		case strings.HasPrefix(f, "# branch.oid "):
			v.state.Head = strings.TrimPrefix(f, "# branch.oid ")
		case strings.HasPrefix(f, "# branch.head "):
			if b := strings.TrimPrefix(f, "# branch.head "); b != "(detached)" {
				v.branch = "refs/heads/" + b
			}
		case strings.HasPrefix(f, "#"):
		default:
			entries = append(entries, f)
			path, renamed := statusPath(f)
			v.paths = append(v.paths, path)
			// A rename or copy is followed by its source path as a field of its own.
			if renamed && i+1 < len(fields) {
				i++
				entries = append(entries, fields[i])
				if fields[i] != "" {
					v.paths = append(v.paths, fields[i])
				}
			}
		}
	}
	if v.state.Head == "" || v.state.Head == "(initial)" {
		return view{}, fmt.Errorf("read HEAD of %s: no commit checked out", w.dir)
	}
	// A step that checked out another branch or commit changed the worktree even when the
	// files are the same: git-norma's own HEAD does not show it, the agent's does.
	if !w.agentOnBranch() {
		moved := "HEAD: " + w.agentHead()
		entries, v.paths = append(entries, moved), append(v.paths, moved)
	}
	sum := sha256.Sum256([]byte(strings.Join(entries, "\x00")))
	v.state.Status = hex.EncodeToString(sum[:])
	return v, nil
}

// statusPath is the path of one porcelain v2 entry: "1 XY sub mH mI mW hH hI path",
// "2 XY sub mH mI mW hH hI Xscore path" (a rename), "u XY sub m1 m2 m3 mW h1 h2 h3 path",
// "? path" or "! path".
func statusPath(entry string) (path string, renamed bool) {
	n := map[byte]int{'1': 9, '2': 10, 'u': 11, '?': 2, '!': 2}[entry[0]]
	if n == 0 {
		return entry, false
	}
	parts := strings.SplitN(entry, " ", n)
	return parts[len(parts)-1], entry[0] == '2'
}

// status is `git status -z` in format, of every untracked file, as a pure read: otherwise git
// status rewrites the index whenever it refreshed file times, after nearly every step — a
// window in which another git command in the worktree fails on index.lock. The answer is the
// same either way. Nested repositories count by their commit (--ignore-submodules=dirty):
// git-norma commits a gitlink, never their files, and an agent's broken one (git init lib)
// must not make git fail here.
func (w *Workspace) status(ctx context.Context, format ...string) (string, error) {
	args := append([]string{"--no-optional-locks", "status"}, format...)
	return w.git.Output(ctx, append(args, "-z", "--untracked-files=all", "--ignore-submodules=dirty")...)
}

// Changes lists what differs from an earlier state: a moved HEAD and every changed path.
func (w *Workspace) Changes(ctx context.Context, since State) ([]string, error) {
	now, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.settled = &now.state
	if now.state == since {
		return nil, nil
	}
	var changes []string
	if now.state.Head != since.Head {
		changes = append(changes, fmt.Sprintf("HEAD moved from %.10s to %.10s", since.Head, now.state.Head))
	}
	return append(changes, now.paths...), nil
}

// Discard returns a run's worktree to the state's commit after a read-only step dirtied it.
func (w *Workspace) Discard(ctx context.Context, to State) error {
	w.settled = nil
	// The agent's git directory as git-norma made it (its own git directory is git-norma's:
	// HEAD there is on the task branch, whatever the step checked out).
	if _, err := w.relinkCommon(); err != nil {
		return err
	}
	if err := w.resetClean(ctx, to.Head); err != nil {
		return err
	}
	return w.syncAgentView()
}
