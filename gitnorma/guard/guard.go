// Package guard is the fallback guard: where the kernel cannot confine an agent, it keeps a copy
// of the repository's small shared files (config, hooks, excludes, attributes) and the
// values of the guarded refs before each agent step, and after the step reports every change
// and restores what it kept. It also watches the main checkout's index and tracked files and
// the run store's records of the run's task, which it reports (and, for forged runs, removes).
package guard

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/worktree"
)

// Guard is the fallback guard of one run: where kernel confinement is missing, it is what
// stands between an agent and the user's checkout, refs and shared git state, and git-norma's
// own state. Before every agent step it keeps a copy of what is small (Snapshot), after the
// step it compares, restores what it can, and reports each change (Check).
type Guard struct {
	Places
	Now   func() time.Time
	Store *store.Store
	// RunID, TaskID and Target are the run's, its task's and the branch it lands on.
	RunID, TaskID, Target string
	// JSONLBacklog: the backlog is git-norma's own jsonl file, which the guard can restore.
	JSONLBacklog bool
	// Confined says the kernel keeps the step's agent from writing every place Check
	// watches (Landlock): then Check is skipped, because it cannot tell the user's own changes
	// made meanwhile (a commit, an edit in the main checkout) from an agent's. nil: no
	// confinement.
	Confined func() bool
	// LiveTasks are the tasks whose lock a live process holds: a run of the task, its landing
	// (which may move the task branch after the run's end is recorded), or git norma land.
	LiveTasks func() map[string]bool
	// index caches the tracked paths between steps while the index file does not change.
	index *indexSnapshot
	// landing releases the landing lock Snapshot took for the step (nil when not held).
	landing func()
	// viaGit reads the refs through git: a symbolic link under refs/ is there (checkRefLinks).
	viaGit bool
}

// Places are where the repository keeps what the guard watches.
type Places struct {
	// Root is the main checkout; GitDir its git directory; NormaDir its .norma.
	Root, GitDir, NormaDir string
	// Git runs git in Root.
	Git git.Runner
}

func (p Places) normaPath(elem ...string) string {
	return filepath.Join(append([]string{p.NormaDir}, elem...)...)
}

// Active says the fallback guard watches the repository for this step.
func (g *Guard) Active() bool {
	return g != nil && (g.Confined == nil || !g.Confined())
}

// Snapshot is the state of the guarded places before a step.
type Snapshot struct {
	at time.Time
	// files are small files restored whole (see smallFiles).
	files []savedFile
	// hooks are the regular files of the hooks directory, by name.
	hooksDir string
	hooks    map[string]savedFile
	// configs are the shared config files, by path.
	configs map[string]savedFile
	// refs are the target's and the task branches' values, by ref name.
	refs map[string]string
	// packed is packed-refs as it was, put back only should it become something else than a
	// file (a named pipe would hang every git command).
	packed savedFile
	// remotes are the remote-tracking refs but the remotes' task branches: what the hooks'
	// gate takes as published.
	remotes map[string]string
	// replaces are the replace refs (git replace), which make git read one commit as another.
	replaces map[string]string
	head     []byte
	index    *indexSnapshot
	// live are the tasks a live process held the lock of (a run, a landing, land).
	live map[string]bool
	// unlanded are the task branches holding a PASS not landed yet (unlandedPasses), judged
	// from the store as it was before the step.
	unlanded map[string]bool
	// links are the symbolic links under the repository's refs directory (refLinks).
	links map[string]bool
	// db are the store's records of this run and its task; dbFile is the file's identity.
	db     store.TaskRecords
	dbFile string
	// unshielded is the store's record that unconfined processes ran here (nil: none), which
	// decides whether a PASS read from the store is evidence (gitnorma/trust.go).
	unshielded *store.Unshielded
	// schema is the digest of the store's schema (store.Facts.Schema).
	schema string
}

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
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSaved {
		return savedFile{path: path, absent: err != nil, link: link, irregular: err == nil, mode: modeOf(st)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return savedFile{path: path, absent: true}
	}
	return savedFile{path: path, data: data, mode: st.Mode().Perm(), link: link}
}

func modeOf(st os.FileInfo) os.FileMode {
	if st == nil {
		return 0
	}
	return st.Mode()
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

func (g *Guard) configPaths() []string {
	return append([]string{filepath.Join(g.GitDir, "config"), filepath.Join(g.GitDir, "config.worktree")}, globalGitFiles("config")...)
}

// includedConfigs are the files the user's global and system configs include ([include],
// [includeIf]: a dotfiles layout's ~/.gitconfig.local), as git reads them outside the
// repository — settings there name filter drivers and hooks as well. An include added during
// the step is a change of the including file's own keys.
func (g *Guard) includedConfigs(ctx context.Context) []string {
	out, err := g.Git.In("/").Output(ctx, "config", "--includes", "--list", "--show-origin", "-z")
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range g.configPaths() {
		seen[p] = true
	}
	var paths []string
	for i, field := range strings.Split(out, "\x00") {
		path, ok := strings.CutPrefix(field, "file:")
		if i%2 == 0 && ok && path != "" && !seen[path] {
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
// (which rewrite history as git reads it), alternates (more object stores).
func (g *Guard) smallFiles() []string {
	gd := g.GitDir
	return append([]string{g.normaPath("config.json"), filepath.Join(gd, "info", "exclude"), filepath.Join(gd, "info", "attributes"),
		filepath.Join(gd, "info", "grafts"), filepath.Join(gd, "objects", "info", "alternates"),
		// commondir makes git take its refs, config, hooks and objects from another directory
		filepath.Join(gd, "commondir")}, globalGitFiles("attributes")...)
}

// gitFiles are the files of the git directory that git opens as it works: something else put
// in the place of one (a named pipe, a device, a directory) would hang or break every git
// command, git-norma's included (checkGitFiles). HEAD and packed-refs are kept a copy of.
func (g *Guard) gitFiles() []string {
	var out []string
	for _, name := range []string{"HEAD", "packed-refs", "index", "ORIG_HEAD", "MERGE_HEAD", "FETCH_HEAD", "shallow"} {
		out = append(out, filepath.Join(g.GitDir, name))
	}
	return out
}

// Snapshot copies what is small and fingerprints the rest. It holds the landing lock until
// Check (or Release): no landing moves the target while the agent works, so a target that moved
// is the agent's doing — a landing record in the store, which the agent can write as well,
// never excuses it.
func (g *Guard) Snapshot(ctx context.Context) (*Snapshot, error) {
	g.Release() // a step that ended without its Check
	unlock, err := flock.WaitFor(ctx, g.normaPath("locks", "land.lock"),
		fmt.Sprintf("run %s of %s, whose unconfined agent works (the fallback guard, process %d)", g.RunID, g.TaskID, os.Getpid()), nil)
	if err != nil {
		return nil, err
	}
	g.landing = unlock
	s := &Snapshot{at: g.Now(), configs: map[string]savedFile{}, hooks: map[string]savedFile{}}
	for _, p := range g.smallFiles() {
		s.files = append(s.files, saveFile(p))
	}
	for _, p := range append(g.configPaths(), g.includedConfigs(ctx)...) {
		s.configs[p] = saveFile(p)
	}
	if dir, err := g.Git.GitPath(ctx, "hooks"); err == nil {
		s.hooksDir, s.hooks = dir, saveHooks(dir)
	}
	s.live = g.liveTasks()
	s.links = g.refLinks()
	if s.refs, err = g.refs(ctx); err != nil {
		g.Release()
		return nil, err
	}
	s.unlanded = g.unlandedPasses(ctx, s.refs)
	if s.remotes, err = g.remotes(ctx); err != nil {
		g.Release()
		return nil, err
	}
	if s.replaces, err = g.replaces(ctx); err != nil {
		g.Release()
		return nil, err
	}
	s.head = readRegular(filepath.Join(g.GitDir, "HEAD"))
	s.packed = saveFile(filepath.Join(g.GitDir, "packed-refs"))
	if s.index, err = g.snapshotIndex(ctx); err != nil {
		g.Release()
		return nil, err
	}
	if g.Store != nil {
		if s.db, err = g.Store.TaskRecords(ctx, g.RunID, g.TaskID); err != nil {
			g.Release()
			return nil, err
		}
		if u, ok, err := g.Store.Facts().UnshieldedSince(ctx); err != nil {
			g.Release()
			return nil, err
		} else if ok {
			s.unshielded = &u
		}
		if s.schema, err = g.Store.Facts().Schema(ctx); err != nil {
			g.Release()
			return nil, err
		}
		s.dbFile = fileIdentity(g.normaPath("norma.db"))
	}
	return s, nil
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

// fileIdentity names the file at path by device and inode: a replaced file is another one.
func fileIdentity(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "absent"
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", sys.Dev, sys.Ino)
	}
	return "present"
}

// Check compares the guarded places with the snapshot, restores what it can and returns one
// line per change: the path (relative to the repository) and what became of it.
func (g *Guard) Check(ctx context.Context, s *Snapshot) []string {
	var found []string
	add := func(path, fate string) { found = append(found, fmt.Sprintf("%s (%s)", g.rel(path), fate)) }
	restored := func(err error, done string) string {
		if err != nil {
			return "could not restore: " + err.Error()
		}
		return done
	}
	// Before any git command: a named pipe put where git opens a file of its own would hang it.
	g.checkGitFiles(s, add)
	// Configs first: until they are set back (core.bare, say) git itself may not work here.
	for _, p := range slices.Sorted(maps.Keys(s.configs)) {
		if change := g.configChange(ctx, s.configs[p]); change != "" {
			found = append(found, change)
		}
	}
	for _, f := range s.files {
		if !f.same(saveFile(f.path)) {
			add(f.path, restored(f.restore(), "restored"))
		}
	}
	if s.hooksDir != "" {
		now := saveHooks(s.hooksDir)
		for _, name := range sortedKeys(now, s.hooks) {
			before, had := s.hooks[name]
			after, has := now[name]
			switch {
			case !had:
				add(after.path, restored(os.Remove(after.path), "removed"))
			case !has || !before.same(after):
				add(before.path, restored(before.restore(), "restored"))
			}
		}
	}
	defer g.Release()
	g.checkRefLinks(s, add) // first: the refs below are read from the files, unless a link is left
	g.viaGit = len(g.refLinks()) > 0
	defer func() { g.viaGit = false }()
	g.checkRefs(ctx, s, add)
	g.checkRemotes(ctx, s, add)
	g.checkReplaces(ctx, s, add)
	if head := readRegular(filepath.Join(g.GitDir, "HEAD")); !bytes.Equal(head, s.head) {
		add(filepath.Join(g.GitDir, "HEAD"), "not restored: the main checkout's files follow it; switch back yourself")
	}
	found = append(found, g.checkIndex(ctx, s.index)...)
	found = append(found, g.checkStore(ctx, s)...)
	sort.Strings(found)
	return found
}

func sortedKeys[V any](ms ...map[string]V) []string {
	var out []string
	for _, m := range ms {
		out = slices.AppendSeq(out, maps.Keys(m))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (g *Guard) rel(p string) string {
	if rel, err := filepath.Rel(g.Root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// refs reads the target's and the task branches' values.
func (g *Guard) refs(ctx context.Context) (map[string]string, error) {
	return readRefs(ctx, g.GitDir, g.Git, "refs/heads", g.viaGit, func(name string) bool {
		return name == "refs/heads/"+g.Target || strings.HasPrefix(name, "refs/heads/"+worktree.BranchPrefix)
	})
}

// remotes reads the remote-tracking refs but the remotes' task branches: exactly what the
// hooks' gate takes as published (hooks.Gate.Published: --remotes --exclude=*/norma/task/*,
// matched below refs/remotes/, so refs/remotes/norma/task/x is published and watched).
func (g *Guard) remotes(ctx context.Context) (map[string]string, error) {
	return readRefs(ctx, g.GitDir, g.Git, "refs/remotes", g.viaGit, func(name string) bool {
		rel, ok := strings.CutPrefix(name, "refs/remotes/")
		return ok && !strings.Contains(rel, "/"+worktree.BranchPrefix)
	})
}

// checkRemotes reports a remote-tracking ref that, made or moved during the step, brings task
// work into what the hooks' gate takes as published — which it then lets through unjudged —
// and sets it back. A fetch can bring task work too (a teammate merged a task's branch on the
// server): the remote is asked, and a ref at what the remote has there is a fetch. A symbolic
// ref is judged by where it leads; a ref that went away publishes nothing more.
func (g *Guard) checkRemotes(ctx context.Context, s *Snapshot, add func(path, fate string)) {
	now, err := g.remotes(ctx)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs", "remotes"), "could not read: "+err.Error())
		return
	}
	var work map[string]bool // the task branches' commits not on the target, read once
	for _, name := range sortedKeys(now) {
		before, after := s.remotes[name], now[name]
		if before == after || after == "" {
			continue
		}
		symbolic := strings.HasPrefix(after, "ref:")
		commit := after
		if symbolic {
			if commit, err = g.Git.Resolve(ctx, name); err != nil {
				continue // leads nowhere: publishes nothing
			}
		}
		if work == nil {
			work = g.taskWork(ctx, s)
		}
		exclude := []string{"refs/heads/" + g.Target}
		if before != "" && !strings.HasPrefix(before, "ref:") {
			exclude = append(exclude, before)
		}
		brought, err := g.Git.Commits(ctx, []string{commit}, exclude)
		if err != nil || !slices.ContainsFunc(brought, func(c string) bool { return work[c] }) {
			continue
		}
		if !symbolic && g.remoteHas(ctx, name, after) {
			continue // a fetch
		}
		add(name, g.setBack(ctx, name, before, after, symbolic))
	}
}

// remoteHas says the remote of a remote-tracking ref has commit at that branch now. Asked only
// for a ref that brings task work; no answer (offline, a remote that is not configured) is no.
func (g *Guard) remoteHas(ctx context.Context, name, commit string) bool {
	remote, branch, ok := strings.Cut(strings.TrimPrefix(name, "refs/remotes/"), "/")
	if !ok {
		return false
	}
	if url, err := g.Git.Config(ctx, "remote."+remote+".url"); err != nil || strings.TrimSpace(url) == "" {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, remoteAnswer)
	defer cancel()
	heads, err := g.Git.RemoteHeads(rctx, remote, branch)
	return err == nil && heads[branch] == commit
}

// remoteAnswer bounds asking a remote whether it has a commit (remoteHas).
const remoteAnswer = 20 * time.Second

// setBack puts a remote-tracking ref back as it was before the step, compare-and-swap for a
// plain one (a move made since is never undone), and says what became of it.
func (g *Guard) setBack(ctx context.Context, name, before, after string, symbolic bool) string {
	const why = ": it made task work look published"
	old := after
	if symbolic {
		old = "" // the symbolic ref itself goes, whatever it leads to
	}
	var err error
	fate := "moved back" + why
	switch {
	case before == "" || symbolic || strings.HasPrefix(before, "ref:"):
		fate = "removed" + why
		if err = g.Git.DeleteRef(ctx, name, old); err == nil && before != "" && !strings.HasPrefix(before, "ref:") {
			fate = "moved back" + why
			err = g.Git.UpdateRef(ctx, name, before, strings.Repeat("0", 40), "")
		}
	default:
		err = g.Git.UpdateRef(ctx, name, before, after, "")
	}
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		fate = "not set back: it moved again since (" + strings.TrimSpace(msg) + ")"
	}
	return fate
}

// replaces reads the replace refs.
func (g *Guard) replaces(ctx context.Context) (map[string]string, error) {
	return readRefs(ctx, g.GitDir, g.Git, "refs/replace", g.viaGit, func(name string) bool { return strings.HasPrefix(name, "refs/replace/") })
}

// checkReplaces sets back every replace ref made, moved or removed during the step: git-norma's
// own git ignores them, but yours would show (check out, push, build on) one commit as
// another — a commit on the target as one holding what no task made.
func (g *Guard) checkReplaces(ctx context.Context, s *Snapshot, add func(path, fate string)) {
	now, err := g.replaces(ctx)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs", "replace"), "could not read: "+err.Error())
		return
	}
	for _, name := range sortedKeys(now, s.replaces) {
		before, after := s.replaces[name], now[name]
		if before == after {
			continue
		}
		fate := "moved back"
		switch {
		case before == "":
			fate, err = "removed", g.Git.DeleteRef(ctx, name, "")
		case after == "":
			fate, err = "restored", g.Git.UpdateRef(ctx, name, before, strings.Repeat("0", 40), "")
		default:
			err = g.Git.UpdateRef(ctx, name, before, "", "")
		}
		if err != nil {
			fate = "could not set back: " + err.Error()
		}
		add(name, fate+": it makes git read one commit as another")
	}
}

// taskWork are the commits of the task branches, before and after the step, that are not on
// the target.
func (g *Guard) taskWork(ctx context.Context, s *Snapshot) map[string]bool {
	now, _ := g.refs(ctx)
	var heads []string
	for _, refs := range []map[string]string{s.refs, now} {
		for name, v := range refs {
			if strings.HasPrefix(name, "refs/heads/"+worktree.BranchPrefix) && v != "" {
				heads = append(heads, v)
			}
		}
	}
	work := map[string]bool{}
	if len(heads) == 0 {
		return work
	}
	commits, _ := g.Git.Commits(ctx, heads, []string{"refs/heads/" + g.Target})
	for _, c := range commits {
		work[c] = true
	}
	return work
}

// checkGitFiles puts back, or removes, what is no longer a file where git opens one of its
// own: HEAD and packed-refs from their copies, the others gone.
func (g *Guard) checkGitFiles(s *Snapshot, add func(path, fate string)) {
	for _, p := range g.gitFiles() {
		st, err := os.Stat(p) // through a link, as git opens it: a link to a pipe is a pipe
		if err != nil && os.IsNotExist(err) || err == nil && st.Mode().IsRegular() {
			continue
		}
		var fate string
		switch filepath.Base(p) {
		case "HEAD":
			fate = "restored: it was no longer a file"
			if err = os.RemoveAll(p); err == nil {
				err = os.WriteFile(p, s.head, 0o644)
			}
		case "packed-refs":
			fate = "restored: it was no longer a file"
			err = s.packed.restore()
		default:
			fate = "removed: it was no longer a file"
			err = os.RemoveAll(p)
		}
		if err != nil {
			fate = "could not set it right: " + err.Error()
		}
		add(p, fate)
	}
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

// refLinks are the symbolic links under the refs directory (the directory itself included):
// git follows them, so a link makes it read refs from elsewhere — a branch the guard, which
// reads the files without following links, would not see move, or a task's branch listed
// under refs/remotes/, where the hooks take what it holds as published.
func (g *Guard) refLinks() map[string]bool {
	links := map[string]bool{}
	_ = filepath.WalkDir(filepath.Join(g.GitDir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			links[p] = true
		}
		return nil
	})
	return links
}

// checkRefLinks removes a symbolic link made under refs/remotes/ or refs/replace/ during the
// step (nothing of yours is there), and reports one made anywhere else under refs/, which only
// you can judge.
func (g *Guard) checkRefLinks(s *Snapshot, add func(path, fate string)) {
	now := g.refLinks()
	for _, p := range sortedKeys(now) {
		if s.links[p] {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(g.GitDir, "refs"), p)
		fate := "not removed: a symbolic link makes git read refs from elsewhere; look at it, then remove it yourself"
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); first == "remotes" || first == "replace" {
			fate = "removed: a symbolic link made git read refs from elsewhere"
			if err := os.Remove(p); err != nil {
				fate = "could not remove it: " + err.Error()
			}
		}
		add(p, fate)
	}
}

// Release lets go of the landing lock Snapshot took, if still held.
func (g *Guard) Release() {
	if g != nil && g.landing != nil {
		g.landing()
		g.landing = nil
	}
}

// checkRefs reports a guarded ref that moved and sets it back, compare-and-swap, so a move
// made after the check is never undone.
//   - The run's own task branch is the workspace's, checked when the step is committed.
//   - The target cannot have moved by a landing: Snapshot held the landing lock.
//   - Another task's branch may be moved by a run of that task going on meanwhile (its lock
//     held before or after the step). A deleted one was landed or pruned, unless it held a PASS
//     not landed yet: that one is put back.
//
// What decides is the task locks and the store as it was before the step, never records
// written during it, which the agent could have written.
func (g *Guard) checkRefs(ctx context.Context, s *Snapshot, add func(path, fate string)) {
	now, err := g.refs(ctx)
	if err != nil {
		add(filepath.Join(g.GitDir, "refs"), "could not read: "+err.Error())
		return
	}
	var liveNow map[string]bool // read once, when a task branch moved
	isBusy := func(task string) bool {
		if liveNow == nil {
			liveNow = g.liveTasks()
		}
		return s.live[task] || liveNow[task]
	}
	own := "refs/heads/" + worktree.TaskBranch(g.TaskID)
	target := "refs/heads/" + g.Target
	for _, name := range sortedKeys(now, s.refs) {
		before, after := s.refs[name], now[name]
		if before == after || name == own {
			continue
		}
		task := strings.TrimPrefix(name, "refs/heads/"+worktree.BranchPrefix)
		if name != target && after == "" && !isBusy(task) && s.unlanded[name] {
			fate := "restored: it holds the task's PASS, not landed yet"
			if err := g.Git.UpdateRef(ctx, name, before, strings.Repeat("0", 40), ""); err != nil {
				fate = "not restored: " + err.Error()
			}
			add(name, fate)
			continue
		}
		if name != target && (after == "" || isBusy(task)) {
			continue
		}
		fate := "moved back"
		var err error
		if before == "" {
			fate, err = "removed", g.Git.DeleteRef(ctx, name, after)
		} else {
			err = g.Git.UpdateRef(ctx, name, before, cmp.Or(after, strings.Repeat("0", 40)), "")
		}
		if err != nil {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			fate = "not moved back: it moved again since (" + strings.TrimSpace(msg) + ")"
		}
		add(name, fate)
	}
}

// unlandedPasses are the task branches (of refs) whose head a run of its task recorded a PASS
// for that did not land: verified work no one has yet, which a deletion would lose.
func (g *Guard) unlandedPasses(ctx context.Context, refs map[string]string) map[string]bool {
	out := map[string]bool{}
	if g.Store == nil {
		return out
	}
	for name, head := range refs {
		if task, ok := strings.CutPrefix(name, "refs/heads/"+worktree.BranchPrefix); ok && g.unlandedPass(ctx, task, head) {
			out[name] = true
		}
	}
	return out
}

// unlandedPass says a run of task recorded a PASS for head that did not land: the branch then
// holds verified work no one has yet, which a deletion (not a landing, nor a prune of a landed
// task) would lose.
func (g *Guard) unlandedPass(ctx context.Context, task, head string) bool {
	if g.Store == nil || head == "" {
		return false
	}
	runs, err := g.Store.RunsForTask(ctx, task, 50)
	if err != nil {
		return false
	}
	for _, r := range runs {
		if r.LandedCommit != "" {
			return false // its work landed: the branch may go
		}
		if r.PassHead == head {
			return true
		}
	}
	return false
}

// liveTasks asks LiveTasks, if set.
func (g *Guard) liveTasks() map[string]bool {
	if g.LiveTasks == nil {
		return map[string]bool{}
	}
	return g.LiveTasks()
}

// distrustReplaced marks the file now at the store's path as one unconfined processes ran
// beside (trust.go): the run's violation goes to the file it opened, which is gone, and the
// new one must not be taken as evidence either. It says what became of it.
func (g *Guard) distrustReplaced(ctx context.Context, s *Snapshot) string {
	mark := store.Unshielded{At: g.Now(), What: "the store was replaced while an unconfined agent of run " + g.RunID + " ran"}
	if s.unshielded != nil {
		mark = *s.unshielded
	}
	st, err := store.Open(ctx, g.normaPath("norma.db"))
	if err != nil {
		return "could not mark it: " + err.Error()
	}
	defer st.Close()
	if err := st.Facts().RestoreUnshielded(ctx, mark); err != nil {
		return "could not mark it: " + err.Error()
	}
	return "marked as written by unconfined processes; move it away and run git norma doctor"
}

// checkStore reports records of this run or its task that the run did not write, and removes
// the runs an agent forged (a task's run can only be started by the process holding its lock:
// this one).
func (g *Guard) checkStore(ctx context.Context, s *Snapshot) []string {
	if g.Store == nil {
		return nil
	}
	db := g.rel(g.normaPath("norma.db"))
	if id := fileIdentity(g.normaPath("norma.db")); id != s.dbFile {
		return []string{db + " (replaced by another file; " + g.distrustReplaced(ctx, s) + ")"}
	}
	var found []string
	// Its schema first: a trigger would write records whenever git-norma writes its own (after
	// this look), a dropped table would take the record below with it.
	if schema, err := g.Store.Facts().Schema(ctx); err != nil || schema != s.schema {
		fate := "not restored: look at it with sqlite3"
		if dropped, err := g.Store.Facts().DropTriggers(ctx); err != nil {
			fate = "could not drop its triggers: " + err.Error()
		} else if len(dropped) > 0 {
			fate = "triggers " + strings.Join(dropped, ", ") + " dropped"
		}
		found = append(found, fmt.Sprintf("%s: its schema changed (%s)", db, fate))
	}
	if before := s.unshielded; before != nil {
		now, ok, err := g.Store.Facts().UnshieldedSince(ctx)
		if err != nil || !ok || now.What != before.What || !now.At.Equal(before.At) {
			fate := "restored"
			if err := g.Store.Facts().RestoreUnshielded(ctx, *before); err != nil {
				fate = "could not restore: " + err.Error()
			}
			found = append(found, fmt.Sprintf("%s: the record that unconfined processes ran here (%s)", db, fate))
		}
	}
	now, err := g.Store.TaskRecords(ctx, g.RunID, g.TaskID)
	if err != nil {
		return append(found, fmt.Sprintf("%s (could not read: %v)", db, err))
	}
	var forged, changed []string
	for id, digest := range now {
		switch before, had := s.db[id]; {
		case !had && id != g.RunID:
			forged = append(forged, id)
		case digest != before:
			changed = append(changed, id)
		}
	}
	sort.Strings(forged)
	sort.Strings(changed)
	if len(forged) > 0 {
		fate := "removed"
		if err := g.Store.RemoveRuns(ctx, forged); err != nil {
			fate = "could not remove: " + err.Error()
		}
		found = append(found, fmt.Sprintf("%s: runs %s of task %s (%s)", db, strings.Join(forged, ", "), g.TaskID, fate))
	}
	if len(changed) > 0 {
		found = append(found, fmt.Sprintf("%s: records of runs %s (not restored)", db, strings.Join(changed, ", ")))
	}
	return found
}
