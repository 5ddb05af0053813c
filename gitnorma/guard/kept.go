package guard

import (
	"cmp"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// KeptPrefix starts the name of the directory, in KeepDir, where one Check keeps what its
// restores replaced; each file is named by its path, relative to the repository, escaped as
// one name (.git%2Finfo%2Fexclude).
const KeptPrefix = "guard.replaced-"

// keep saves, before a restore replaces or removes it, the file found at f.path (f): in a
// directory made afresh for this Check, each file created new, so that nothing an agent left
// in the run dir (a symbolic link into the hooks) decides where it goes.
func (g *Guard) keep(f savedFile) { g.keepAs(f, "") }

// keepAs is keep, the kept file's name ending in suffix.
func (g *Guard) keepAs(f savedFile, suffix string) {
	if g.KeepDir == "" || f.absent || f.irregular {
		return
	}
	if g.kept == "" {
		dir, err := os.MkdirTemp(g.KeepDir, KeptPrefix)
		if err != nil {
			return
		}
		g.kept = dir
	}
	name := url.PathEscape(strings.TrimPrefix(filepath.ToSlash(g.rel(f.path)), "/")) + suffix
	// Yours alone, and executable if it was (a hook copied back must run).
	file, err := os.OpenFile(filepath.Join(g.kept, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600|f.mode.Perm()&0o100)
	if err != nil {
		return
	}
	_, err = file.Write(f.data)
	if err = cmp.Or(err, file.Close()); err != nil {
		_ = os.Remove(file.Name())
	}
}

// KeptEvent is the run's event saying where a Check kept what its restores replaced.
const KeptEvent = "guard_kept"

// noteKept records in the run's events where Check kept what it replaced, if anywhere.
func (g *Guard) noteKept(ctx context.Context) {
	if g.kept == "" || g.Store == nil {
		return
	}
	_ = g.Store.AppendEvent(ctx, g.RunID, store.Event{TS: g.Now(), Type: KeptEvent,
		Message: "what the guard replaced is kept in " + g.rel(g.kept) + " (each file named by its path)"})
}
