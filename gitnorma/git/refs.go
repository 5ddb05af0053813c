package git

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Branch is a branch with its head and the worktree that has it checked out, as
// `git for-each-ref --format='%(refname:short) %(objectname) %(worktreepath)'` prints it.
type Branch struct {
	Name     string // short name, without refs/heads/
	Head     string
	Worktree string // "" when no worktree has it checked out
}

// ReadBranches lists the branches under refs/heads/<prefix>, sorted by name, from the files
// of the common git directory — loose refs, packed-refs and each worktree's HEAD — without
// starting git. It answers only for the files-backend layout it fully understands: a reftable
// repository, a symbolic ref or anything unexpected returns ok=false, and the caller asks git.
// Files git replaces atomically (refs, HEAD, packed-refs) are read whole; a worktree or ref
// that disappears meanwhile is simply not listed, as git would not list it a moment later.
func ReadBranches(common, prefix string) (branches []Branch, ok bool) {
	if _, err := os.Lstat(filepath.Join(common, "reftable")); !os.IsNotExist(err) {
		return nil, false
	}
	full := "refs/heads/" + prefix
	// Loose refs first, then packed-refs, as git reads them: `git pack-refs` writes the new
	// packed-refs before it deletes the loose files, so a ref being packed meanwhile is found
	// in one or the other, never missed.
	heads := map[string]string{}
	if !looseRefs(common, full, heads) {
		return nil, false
	}
	packed, ok := packedRefs(common, full)
	if !ok {
		return nil, false
	}
	for ref, oid := range packed {
		if _, loose := heads[ref]; !loose {
			heads[ref] = oid
		}
	}
	checkedOut, ok := worktreeHeads(common)
	if !ok {
		return nil, false
	}
	for ref, head := range heads {
		branches = append(branches, Branch{Name: strings.TrimPrefix(ref, "refs/heads/"), Head: head, Worktree: checkedOut[ref]})
	}
	slices.SortFunc(branches, func(a, b Branch) int { return strings.Compare(a.Name, b.Name) })
	return branches, true
}

// packedRefs reads the refs under prefix from packed-refs ("<oid> <ref>" lines; "^<oid>"
// lines peel the tag above them).
func packedRefs(common, prefix string) (map[string]string, bool) {
	heads := map[string]string{}
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if os.IsNotExist(err) {
		return heads, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		oid, ref, found := strings.Cut(line, " ")
		if !found || !isObjectID(oid) {
			return nil, false
		}
		if strings.HasPrefix(ref, prefix) {
			heads[ref] = oid
		}
	}
	return heads, sc.Err() == nil
}

// looseRefs adds the loose refs under prefix to heads (a loose ref wins over its packed copy).
// Names git would not accept as refs (a leftover "x.lock") are skipped, as git skips them.
func looseRefs(common, prefix string, heads map[string]string) bool {
	root := filepath.Join(common, filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // no such directory yet, or removed while walking
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		if !d.Type().IsRegular() {
			return fs.ErrInvalid
		}
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		oid := strings.TrimRight(string(data), "\n")
		if !isObjectID(oid) {
			return fs.ErrInvalid // a symbolic ref or a torn file: git knows what to make of it
		}
		rel, err := filepath.Rel(common, path)
		if err != nil {
			return err
		}
		heads[filepath.ToSlash(rel)] = oid
		return nil
	})
	return err == nil
}

// worktreeHeads maps each branch checked out in a worktree to that worktree's path, the way
// git names them: the main worktree is the common directory without its "/.git"; a linked one
// is what its gitdir file says, without "/.git".
func worktreeHeads(common string) (map[string]string, bool) {
	out := map[string]string{}
	if ref, ok := symbolicHead(filepath.Join(common, "HEAD")); ok {
		out[ref] = strings.TrimSuffix(common, "/.git")
	}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !os.IsNotExist(err) {
		return nil, false
	}
	for _, e := range entries {
		dir := filepath.Join(common, "worktrees", e.Name())
		ref, ok := symbolicHead(filepath.Join(dir, "HEAD"))
		if !ok {
			continue // detached, or half made or half removed: holds no branch
		}
		data, err := os.ReadFile(filepath.Join(dir, "gitdir"))
		if err != nil {
			continue
		}
		path := strings.TrimSpace(string(data))
		if !filepath.IsAbs(path) {
			return nil, false // relative worktree paths: git resolves them
		}
		out[ref] = strings.TrimSuffix(path, "/.git")
	}
	return out, true
}

// symbolicHead reads a HEAD file that points at a branch.
func symbolicHead(path string) (string, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(strings.TrimSpace(string(data)), "ref: ")
}

// isObjectID says whether s is a full SHA-1 or SHA-256 object id in lowercase hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ReadHeadAt reads what HEAD of the work tree whose git directory is gitDir points at — the
// branch ("" when detached) and its commit — from the files, the way git would resolve it,
// without starting git. gitDir is known beforehand (a worktree's .git file may be gone or
// point elsewhere; see Runner.Pinned). ok is false whenever the answer would need git: a
// reftable repository, a symbolic ref behind the branch, an unborn branch, a HEAD that
// names no branch under refs/heads/.
func ReadHeadAt(gitDir string) (branch, oid string, ok bool) {
	common, ok := commonDirOf(gitDir)
	if !ok {
		return "", "", false
	}
	if _, err := os.Lstat(filepath.Join(common, "reftable")); !os.IsNotExist(err) {
		return "", "", false
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	head := strings.TrimSpace(string(data))
	if isObjectID(head) {
		return "", head, true
	}
	branch, found := strings.CutPrefix(head, "ref: ")
	if !found || !strings.HasPrefix(branch, "refs/heads/") {
		return "", "", false
	}
	if data, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(branch))); err == nil {
		oid = strings.TrimRight(string(data), "\n")
		return branch, oid, isObjectID(oid)
	} else if !os.IsNotExist(err) {
		return "", "", false
	}
	packed, ok := packedRefs(common, branch)
	if oid = packed[branch]; !ok || oid == "" {
		return "", "", false
	}
	return branch, oid, true
}
