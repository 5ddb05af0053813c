package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/git-norma/git-norma/loop"
)

// savedFile is a file's content as it was ("absent" when there was none), read through a
// symbolic link as git reads it (a config may be one, into the user's dotfiles).
type savedFile struct {
	path   string
	data   []byte
	mode   os.FileMode
	absent bool
	// link is where path pointed when it was a symbolic link ("" for a file).
	link string
	// irregular: something other than a file was there (a directory, a pipe, which reading
	// would block on), or a file too large to keep a copy of: its content was not read.
	irregular bool
}

// maxSaved bounds the files the guard keeps a copy of: an agent must not make git-norma run
// out of memory with a sparse file of 40 GB.
const maxSaved = 64 << 20

func saveFile(path string) savedFile {
	link, _ := os.Readlink(path)
	st, err := os.Stat(path)
	if err != nil {
		return savedFile{path: path, absent: true, link: link}
	}
	if !st.Mode().IsRegular() || st.Size() > maxSaved {
		return savedFile{path: path, link: link, irregular: true, mode: st.Mode()}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return savedFile{path: path, absent: true}
	}
	return savedFile{path: path, data: data, mode: st.Mode().Perm(), link: link}
}

func (f savedFile) same(g savedFile) bool {
	return f.absent == g.absent && f.link == g.link && f.irregular == g.irregular && f.mode == g.mode && bytes.Equal(f.data, g.data)
}

// restore puts the file back as it was: removed if it was absent, else rewritten whole
// through a new file, so nothing ever reads it half written. A link goes back as the link
// (dangling or not), and what it points at gets back the content read through it.
func (f savedFile) restore() error {
	if f.irregular {
		return errors.New("it was no file git-norma keeps a copy of")
	}
	tmp := f.path + ".norma-restore"
	if f.link != "" {
		if now, _ := os.Readlink(f.path); now != f.link {
			_ = os.Remove(tmp)
			if err := os.Symlink(f.link, tmp); err != nil {
				return err
			}
			if err := os.Rename(tmp, f.path); err != nil {
				return err
			}
		}
		if f.absent {
			return nil
		}
		if st, err := os.Stat(f.path); err == nil && !st.Mode().IsRegular() {
			return errors.New("what the link points at is no longer a file") // writing a pipe would block
		}
		return os.WriteFile(f.path, f.data, f.mode)
	}
	// A directory or pipe put in its place goes (a file of the repository's git directory:
	// nothing of anyone's is in it).
	if st, err := os.Lstat(f.path); err == nil && st.IsDir() {
		if err := os.RemoveAll(f.path); err != nil {
			return err
		}
	}
	if f.absent {
		err := os.Remove(f.path)
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, f.mode); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

// readRegular is the content of the regular file at path, nil for anything else (never
// blocking on a named pipe: loop.OpenRegular).
func readRegular(path string) []byte {
	f, err := loop.OpenRegular(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxSaved))
	return data
}

func (g *Guard) configPaths() []string {
	return append([]string{filepath.Join(g.GitDir, "config"), filepath.Join(g.GitDir, "config.worktree")}, globalGitFiles("config")...)
}

// includedConfigs are the files the user's global and system configs include ([include],
// [includeIf]: a dotfiles layout's ~/.gitconfig.local), as git reads them outside the
// repository — settings there name filter drivers and hooks as well. An include added during
// the step is a change of the including file's own keys.
func (g *Guard) includedConfigs(ctx context.Context) []string {
	files, err := g.Git.In("/").ConfigFiles(ctx)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range g.configPaths() {
		seen[p] = true
	}
	var paths []string
	for _, path := range files {
		if !seen[path] {
			seen[path] = true
			paths = append(paths, path)
		}
	}
	return paths
}

// globalGitFiles are the user's global git files of that name — ~/.gitconfig (or
// GIT_CONFIG_GLOBAL) for "config", and $XDG_CONFIG_HOME/git/<name>: they name hooks, filter
// drivers and more that git-norma's own git commands, and the user's, would run.
func globalGitFiles(name string) []string {
	var out []string
	home, _ := os.UserHomeDir()
	if name == "config" {
		if system := os.Getenv("GIT_CONFIG_SYSTEM"); system != "" {
			out = append(out, system)
		} else if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
			out = append(out, "/etc/gitconfig")
		}
		if global := os.Getenv("GIT_CONFIG_GLOBAL"); global != "" {
			return append(out, global)
		}
		if home != "" {
			out = append(out, filepath.Join(home, ".gitconfig"))
		}
	}
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", name))
	}
	return out
}

// smallFiles are restored whole: git-norma's config, and the shared files beside git's config
// that change what git sees — ignored paths, attributes (which name filter drivers), grafts
// (which rewrite history as git reads it), alternates (more object stores), and commondir
// (which makes git take its refs, config, hooks and objects from another directory).
func (g *Guard) smallFiles() []string {
	gd := g.GitDir
	return append([]string{g.normaPath("config.json"), filepath.Join(gd, "info", "exclude"), filepath.Join(gd, "info", "attributes"),
		filepath.Join(gd, "info", "grafts"), filepath.Join(gd, "objects", "info", "alternates"), filepath.Join(gd, "commondir")},
		globalGitFiles("attributes")...)
}

// saveHooks saves the files of a hooks directory, and its symbolic links: git runs a hook
// that is one as well.
func saveHooks(dir string) map[string]savedFile {
	out := map[string]savedFile{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		f := saveFile(filepath.Join(dir, e.Name()))
		if e.Type().IsRegular() && !f.absent || e.Type()&fs.ModeSymlink != 0 {
			out[e.Name()] = f
		}
	}
	return out
}

// checkGitFiles sets right the files of the git directory that git opens as it works, where
// something else took the place of one (a named pipe, a device, a directory): it would hang or
// break every git command, git-norma's included. HEAD and packed-refs are put back from their
// copies, the others removed.
func (g *Guard) checkGitFiles(s *Snapshot, add func(path, fate string)) {
	for _, name := range []string{"HEAD", "packed-refs", "index", "ORIG_HEAD", "MERGE_HEAD", "FETCH_HEAD", "shallow"} {
		p := filepath.Join(g.GitDir, name)
		st, err := os.Stat(p) // through a link, as git opens it: a link to a pipe is a pipe
		if err != nil && os.IsNotExist(err) || err == nil && st.Mode().IsRegular() {
			continue
		}
		fate := "restored: it was no longer a file"
		switch name {
		case "HEAD":
			if err = os.RemoveAll(p); err == nil {
				err = os.WriteFile(p, s.head, 0o644)
			}
		case "packed-refs":
			err = s.packed.restore()
		default:
			fate, err = "removed: it was no longer a file", os.RemoveAll(p)
		}
		add(p, outcome(err, fate, "could not set it right: "))
	}
}
