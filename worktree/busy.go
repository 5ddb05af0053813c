package worktree

import (
	"os"
	"path/filepath"
	"strings"
)

// branchOperation says which rebase or bisect, in which worktree, is working on branch, or ""
// when none is. git detaches HEAD while it runs one and moves the branch itself at the end,
// so the branch looks free (no worktree has it checked out); landing on it meanwhile would
// make the rebase fail ("cannot lock ref ... expected ...") and leave the user's rewritten
// commits on a detached HEAD. git refuses to delete such a branch for the same reason.
//
// commonDir is the repository's common git directory: the main worktree's state lives there,
// each linked worktree's under worktrees/<name>.
func branchOperation(commonDir, branch string) string {
	if commonDir == "" {
		return ""
	}
	dirs, _ := filepath.Glob(filepath.Join(commonDir, "worktrees", "*"))
	for _, dir := range append([]string{commonDir}, dirs...) {
		for _, op := range []struct{ file, what string }{
			{"rebase-merge/head-name", "a rebase"},
			{"rebase-apply/head-name", "a rebase"},
			{"BISECT_START", "a bisect"},
		} {
			data, err := os.ReadFile(filepath.Join(dir, op.file))
			if err != nil {
				continue
			}
			name := strings.TrimPrefix(strings.TrimSpace(string(data)), "refs/heads/")
			if name == branch {
				return op.what + " in " + worktreeOf(commonDir, dir)
			}
		}
	}
	return ""
}

// worktreeOf names the checkout a worktree's git directory belongs to, for messages.
func worktreeOf(commonDir, dir string) string {
	if dir == commonDir {
		return filepath.Dir(commonDir)
	}
	if path, ok := linkedPath(dir); ok {
		return path
	}
	return dir
}
