package worktree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A run's worktree has two git directories. The one git made (<common>/worktrees/<name>) is
// the agent's: a confined agent may write it (its index is there), so all in it — HEAD, a
// commondir naming another repository, a config.worktree with a filter, a link where git
// writes COMMIT_EDITMSG — is the agent's making, even during git-norma's commit should a step's
// process outlive it. git-norma's own git uses one of its own beside the worktree, in the run's
// directory where no step writes (same commondir, HEAD on the task branch, its own index), and
// after each change sets the agent's HEAD and index to match.

// ownGitDirName is git-norma's own git directory beside the run worktree (.norma/runs/<run>/git).
const ownGitDirName = "git"

// makeOwnGitDir makes git-norma's own git directory for the worktree at path from its git
// directory admin; fresh says git has just made admin (nothing ran there since). Otherwise an
// existing one is kept, and one is made only for an older git-norma's worktree.
func makeOwnGitDir(path, admin, common string, fresh bool) (string, error) {
	own := filepath.Join(filepath.Dir(path), ownGitDirName)
	if !fresh {
		if st, err := os.Lstat(filepath.Join(own, "HEAD")); err == nil && st.Mode().IsRegular() {
			return own, nil
		}
	}
	head, err := readSmallFile(filepath.Join(admin, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("read the worktree's HEAD: %w", err)
	}
	// Made aside and renamed into place, so that a crash leaves either none or a whole one.
	tmp := own + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return "", err
	}
	err = os.WriteFile(filepath.Join(tmp, "HEAD"), head, 0o644)
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "commondir"), []byte(common+"\n"), 0o644)
	}
	if err == nil {
		err = writeRecord(tmp, admin)
	}
	if err == nil {
		// None (an agent removed it) is an empty index: git add fills it again.
		if err = copyRegular(filepath.Join(admin, "index"), filepath.Join(tmp, "index")); os.IsNotExist(err) {
			err = nil
		}
	}
	if err == nil && fresh {
		// A sparse checkout's settings, which git add has just copied from your checkout's
		// (nothing else has run there yet): the worktree stays as sparse as yours.
		err = copySparse(admin, tmp)
	}
	if err == nil {
		err = os.RemoveAll(own)
	}
	if err == nil {
		err = os.Rename(tmp, own)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("make git-norma's own git directory for %s: %w", path, err)
	}
	return own, nil
}

// copySparse copies the git directory from's sparse-checkout settings, if any, into to.
func copySparse(from, to string) error {
	for _, f := range []string{"config.worktree", filepath.Join("info", "sparse-checkout")} {
		if _, err := os.Lstat(filepath.Join(from, f)); os.IsNotExist(err) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, f)), 0o700); err != nil {
			return err
		}
		if err := copyRegular(filepath.Join(from, f), filepath.Join(to, f)); err != nil {
			return err
		}
	}
	return nil
}

// agentHead is the agent's HEAD file, read as data ("" when it is not a small regular file).
func (w *Workspace) agentHead() string {
	data, err := readSmallFile(filepath.Join(w.gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// agentOnBranch says the agent's HEAD is still on the task branch.
func (w *Workspace) agentOnBranch() bool {
	return w.branch == "" || w.agentHead() == "ref: refs/heads/"+w.branch
}

// syncAgentView sets the agent's HEAD and index to git-norma's, after git-norma changed them.
// Each is written aside and renamed over: never through whatever the agent left at its path.
func (w *Workspace) syncAgentView() error {
	if w.ownDir == "" {
		return nil
	}
	if !w.agentOnBranch() {
		if err := replaceFile(filepath.Join(w.gitDir, "HEAD"), strings.NewReader("ref: refs/heads/"+w.branch+"\n")); err != nil {
			return fmt.Errorf("put the worktree's HEAD back on %s: %w", w.branch, err)
		}
	}
	src, err := os.Open(filepath.Join(w.ownDir, "index"))
	if err != nil {
		return err
	}
	defer src.Close()
	return replaceFile(filepath.Join(w.gitDir, "index"), src)
}

// replaceFile writes content to a new file, created exclusively under a name of its own, and
// renames it over path: nothing an agent left in the directory is followed or in the way.
func replaceFile(path string, content io.Reader) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".norma-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(0o644)
	if err == nil {
		_, err = io.Copy(f, content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// copyRegular copies the regular file from to a new file to.
func copyRegular(from, to string) error {
	src, err := openRegular(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// openRegular opens path for reading only when it is a regular file (a pipe would block). The
// type is checked on what was opened — O_NOFOLLOW refuses a symbolic link, O_NONBLOCK keeps a
// pipe from blocking the open —, so nothing an agent's leftover process swaps in between a
// look and the open gets through.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}

// readRegular reads path only when it is a regular file (see openRegular).
func readRegular(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// readSmallFile reads a regular file of at most 4 KiB (a HEAD, a gitdir or .git link).
func readSmallFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4097))
	if err == nil && len(data) > 4096 {
		err = fmt.Errorf("%s is larger than 4 KiB: no file of git's links or heads is", path)
	}
	return data, err
}
