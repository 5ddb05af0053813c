package guard

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// indexSnapshot is the main checkout's staging area and tracked files before a step: what the
// index lists (a digest of `git ls-files -s`: modes, object ids, stages and paths — not the
// stat data git refreshes whenever it likes, so a user's git status is no change), and the
// lstat of every tracked file.
//
// The files are compared with their own lstat from before the step, not with the index's stat
// data: git's way (index stat against lstat) tells a file changed since it was staged, which
// the user's edits in progress are too; the step's own window is what the guard must judge.
// Around each agent step that is one git ls-files and one lstat per tracked file, no content
// read, as git's own check (BenchmarkGuardIndex: 20,000 files).
type indexSnapshot struct {
	stat   string
	digest string
	paths  []string
	files  []fileStat
}

type fileStat struct {
	size, mtime, ctime int64
	ino                uint64
	mode               uint32
}

func lstatOf(path string) fileStat {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return fileStat{mode: ^uint32(0)}
	}
	return fileStat{size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), ino: st.Ino, mode: st.Mode}
}

func (g *Guard) indexPath() string { return filepath.Join(g.GitDir, "index") }

// snapshotIndex lists the tracked paths and lstats them.
func (g *Guard) snapshotIndex(ctx context.Context) (*indexSnapshot, error) {
	s, err := g.listIndex(ctx, StatLine(g.indexPath()))
	if err != nil {
		return nil, err
	}
	s.files = make([]fileStat, len(s.paths))
	for i, p := range s.paths {
		s.files[i] = lstatOf(filepath.Join(g.Root, p))
	}
	return s, nil
}

// listIndex reads the index through git (any index version, split or sparse). The backlog and
// .norma/ are left out: their own guards judge them, and git-norma writes them meanwhile.
func (g *Guard) listIndex(ctx context.Context, stat string) (*indexSnapshot, error) {
	if strings.HasPrefix(stat, "absent") {
		return &indexSnapshot{stat: stat}, nil
	}
	out, err := g.Git.IndexEntries(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the main checkout's index: %w", err)
	}
	s := &indexSnapshot{stat: stat, digest: fmt.Sprintf("%x", sha256.Sum256([]byte(out)))}
	last := ""
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok || path == last || strings.HasPrefix(meta, "160000 ") ||
			strings.HasPrefix(path, ".beads/") || strings.HasPrefix(path, ".norma/") {
			continue
		}
		last = path
		s.paths = append(s.paths, path)
	}
	return s, nil
}

// checkIndex reports a changed staging area and the tracked files whose lstat changed. None of
// it can be restored: git-norma keeps no copy of the user's files. (No landing of git-norma's
// changes them meanwhile: Snapshot holds the landing lock.)
func (g *Guard) checkIndex(ctx context.Context, before *indexSnapshot) []string {
	if before == nil {
		return nil
	}
	var found []string
	stat := StatLine(g.indexPath())
	if stat != before.stat {
		if now, err := g.listIndex(ctx, stat); err != nil || now.digest != before.digest {
			found = append(found, g.rel(g.indexPath())+" (not restored: the staging area is the user's; see git status)")
		}
	}
	const most = 20
	files := 0
	for i, p := range before.paths {
		if lstatOf(filepath.Join(g.Root, p)) == before.files[i] {
			continue
		}
		if files++; files <= most {
			found = append(found, p+" (not restored: the main checkout's files are the user's; see git diff)")
		}
	}
	if files > most {
		found = append(found, fmt.Sprintf("%d more tracked files (not restored)", files-most))
	}
	return found
}

// StatLine is "<what stat says>\t<path>": the path last, after a tab, so any path (spaces
// included) reads back whole.
func StatLine(p string) string {
	st, err := os.Lstat(p)
	if err != nil {
		return "absent\t" + p
	}
	if st.IsDir() {
		return fmt.Sprintf("dir %v\t%s", st.Mode(), p)
	}
	return fmt.Sprintf("%d %v %d\t%s", st.Size(), st.Mode(), st.ModTime().UnixNano(), p)
}

// StrictStatLine is StatLine with the change time and the inode: an agent can set a file's
// modification time back (touch -d), never its change time, and a file put in place anew has
// another inode. For files only git-norma writes, and never while an agent runs.
func StrictStatLine(p string) string {
	line := StatLine(p)
	st, err := os.Lstat(p)
	if err != nil {
		return line
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return line
	}
	return fmt.Sprintf("%d %d %s", sys.Ctim.Nano(), sys.Ino, line)
}
