package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-norma/git-norma/notes"
)

// gitignoreContent keeps everything under .norma/ out of git except the shared config (and
// this file itself, so clones ignore the same things).
const gitignoreContent = `# git-norma: runs, worktrees, logs and the database are local state.
*
!.gitignore
!config.json
`

// InitResult says what `git norma init` did, path by path.
type InitResult struct {
	Root    string   `json:"root"`
	Created []string `json:"created"`
	Kept    []string `json:"kept"`
}

// InitOptions are the choices of `git norma init`.
type InitOptions struct {
	// DisplayNotes makes plain `git log` show the journal notes (notes.displayRef).
	DisplayNotes bool
}

// Init creates .norma/ (config with the defaults, database, locks/, runs/, .gitignore) and
// configures the notes journal. It is safe to re-run: existing files are kept (a malformed
// config is reported, not overwritten).
func Init(ctx context.Context, dir string, o InitOptions) (InitResult, error) {
	repo, err := OpenRepo(ctx, dir)
	if err != nil {
		return InitResult{}, err
	}
	if err := repo.Git.CheckVersion(ctx); err != nil {
		return InitResult{}, withCode(ExitFatal, err)
	}
	res := InitResult{Root: repo.Root}
	for _, d := range []string{repo.NormaDir(), repo.Path("locks"), repo.Path("runs")} {
		if err := res.mkdir(repo, d); err != nil {
			return res, err
		}
	}
	if err := res.writeOnce(repo, repo.Path(".gitignore"), []byte(gitignoreContent)); err != nil {
		return res, err
	}
	cfg, _ := json.MarshalIndent(DefaultConfig(), "", "  ")
	if err := res.writeOnce(repo, repo.Path("config.json"), append(cfg, '\n')); err != nil {
		return res, err
	}
	if _, err := LoadConfig(repo.Path("config.json")); err != nil {
		return res, err
	}
	if err := notes.Configure(ctx, repo.Git); err != nil {
		return res, withCode(ExitFatal, fmt.Errorf("configure git notes: %w", err))
	}
	if o.DisplayNotes {
		if err := notes.ShowInLog(ctx, repo.Git); err != nil {
			return res, withCode(ExitFatal, fmt.Errorf("configure notes.displayRef: %w", err))
		}
	}
	app := &App{Repo: repo, Config: DefaultConfig()}
	_, statErr := os.Stat(repo.Path("norma.db"))
	st, err := app.OpenStore(ctx)
	if err != nil {
		return res, err
	}
	st.Close()
	res.note(repo, repo.Path("norma.db"), errors.Is(statErr, os.ErrNotExist))
	return res, nil
}

func (r *InitResult) mkdir(repo *Repo, dir string) error {
	_, err := os.Stat(dir)
	if err == nil {
		r.note(repo, dir, false)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return withCode(ExitFatal, fmt.Errorf("create %s: %w", dir, err))
	}
	r.note(repo, dir, true)
	return nil
}

// writeOnce creates path with data unless it exists; user edits are never overwritten.
func (r *InitResult) writeOnce(repo *Repo, path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		r.note(repo, path, false)
		return nil
	}
	if err != nil {
		return withCode(ExitFatal, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return withCode(ExitFatal, err)
	}
	r.note(repo, path, true)
	return f.Close()
}

func (r *InitResult) note(repo *Repo, path string, created bool) {
	rel, err := filepath.Rel(repo.Root, path)
	if err != nil {
		rel = path
	}
	if created {
		r.Created = append(r.Created, rel)
	} else {
		r.Kept = append(r.Kept, rel)
	}
}
