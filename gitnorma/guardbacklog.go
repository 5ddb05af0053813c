package gitnorma

import (
	"cmp"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/stamp"
)

// The backlog can be large, so the guard never copies it before a step: it keeps a second name
// for the file (a hard link in the run dir). git-norma, and the tools agents use to edit a
// file (sed -i, editors, git norma task add), write a new file and rename it into place, so
// the link keeps the backlog as it was; an agent that wrote it in place changed the linked
// copy too, which its fingerprint tells, and the backlog is then reported, not restored.
const backlogLinkName = "backlog.guard"

// backlogReplacedName is, in the run dir, the backlog a restore replaced: the guard cannot tell
// an agent's rewrite from a person's (a git pull, sed -i) made during the step.
const backlogReplacedName = "backlog.replaced"

func (w workspace) backlogLink() string { return filepath.Join(w.runDir, backlogLinkName) }

func backlogFile(root string) string { return filepath.Join(root, ".beads", "issues.jsonl") }

// linkBacklog keeps the backlog as it is before a step (for git-norma's own jsonl backlog:
// bd keeps its own database beside the file, which a restored file would not match).
func (w workspace) linkBacklog() {
	if w.guard == nil || !w.guard.JSONLBacklog {
		return
	}
	_ = os.Remove(w.backlogLink())
	_ = os.Link(backlogFile(w.root), w.backlogLink())
}

// restoreBacklog puts the backlog back as it was before the step when the linked copy still
// is (its size, mode and time are the snapshot's) and git-norma last left it so (its stamp is
// the snapshot's: a parallel run's write during the step must not be undone), and stamps it
// as git-norma's own (the caller holds the backlog lock). The file it replaces, which may be a
// person's (a git pull during the step), is kept in the run dir: kept is its path ("" if
// there was none to keep).
func (w workspace) restoreBacklog(before map[string]bool) (ok bool, kept string) {
	if w.guard == nil || !w.guard.JSONLBacklog {
		return false, ""
	}
	stamped, err := os.ReadFile(stamp.Path(w.root))
	if err != nil {
		return false, ""
	}
	for _, l := range strings.Split(string(stamped), "\n") {
		if !before[l] {
			return false, ""
		}
	}
	link := guard.StatLine(w.backlogLink())
	was := strings.TrimSuffix(link, w.backlogLink()) + backlogFile(w.root)
	if strings.HasPrefix(link, "absent") || !before[was] {
		return false, ""
	}
	src, err := os.Open(w.backlogLink())
	if err != nil {
		return false, ""
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(backlogFile(w.root)), ".issues.jsonl.restore-*")
	if err != nil {
		return false, ""
	}
	mode := fs.FileMode(0o644) // CreateTemp's 0600 would hide the backlog from the user's group
	if st, err := os.Stat(backlogFile(w.root)); err == nil {
		mode = st.Mode().Perm()
	}
	_, err = io.Copy(tmp, src)
	err = cmp.Or(err, tmp.Chmod(mode), tmp.Sync(), tmp.Close()) // durable before it replaces the file
	if err == nil {
		// A second name for the file about to be replaced; without one, it is not replaced.
		kept = filepath.Join(w.runDir, backlogReplacedName)
		_ = os.Remove(kept)
		if err = os.Link(backlogFile(w.root), kept); errors.Is(err, fs.ErrNotExist) {
			kept, err = "", nil // deleted: nothing to keep
		}
	}
	if err == nil {
		err = os.Rename(tmp.Name(), backlogFile(w.root))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return false, ""
	}
	stamp.Write(w.root)
	return true, kept
}
