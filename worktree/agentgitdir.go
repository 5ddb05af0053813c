package worktree

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// relinkCommon restores the git directory's commondir (and what removeOddFiles,
// restoreWorktreeConfig and restoreRunLinks restore), and says whether it had to. A confined
// agent may write that directory; git takes the ref store from commondir even under
// GIT_COMMON_DIR, so git-norma's commit would move refs wherever the agent chose.
func (w *Workspace) relinkCommon() (bool, error) {
	removed, err := removeOddFiles(w.gitDir)
	if err != nil {
		return removed, err
	}
	changed, err := w.restoreWorktreeConfig()
	changed = changed || removed
	if err != nil || w.common == "" {
		return changed, err
	}
	// A gitdir naming your worktree would have a prune delete yours as a duplicate; without
	// its lock a prune could drop this one.
	if w.rec.admin != "" {
		relinked, err := restoreRunLinks(w.rec, w.runID)
		changed = changed || relinked
		if err != nil {
			return changed, err
		}
	}
	path := filepath.Join(w.gitDir, "commondir")
	if named, ok := readLink(path, "", w.gitDir); ok {
		if st, err := os.Lstat(path); err == nil && st.Mode().IsRegular() && sameDir(named, w.common) {
			return changed, nil
		}
	}
	return true, replaceFile(path, strings.NewReader(w.common+"\n"))
}

// removeOddFiles removes what is neither a directory nor a regular file in the git directory
// dir, and says whether there was any. git-norma's git opens files there (COMMIT_EDITMSG,
// logs/HEAD): through an agent's symlink it would write wherever that points (~/.bashrc), on
// a pipe it would block.
func removeOddFiles(dir string) (bool, error) {
	removed := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Type().IsRegular() {
			return nil
		}
		removed = true
		return os.Remove(path)
	})
	return removed, err
}

// restoreWorktreeConfig puts gitDir/config.worktree back as git made it; true if it had to.
// It reads only a regular file there: through a pipe an agent left it would block.
func (w *Workspace) restoreWorktreeConfig() (bool, error) {
	path := filepath.Join(w.gitDir, "config.worktree")
	data, err := readRegular(path)
	switch {
	case w.worktreeConfig == nil && os.IsNotExist(err):
		return false, nil
	case err == nil && bytes.Equal(data, w.worktreeConfig):
		return false, nil
	}
	if err := os.RemoveAll(path); err != nil {
		return true, err
	}
	if w.worktreeConfig == nil {
		return true, nil
	}
	return true, replaceFile(path, bytes.NewReader(w.worktreeConfig))
}
