package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/tracker"
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
	// Tracker is the backlog in use (beads or jsonl); Hint suggests Beads when bd is installed.
	Tracker string `json:"tracker"`
	Hint    string `json:"hint,omitempty"`
	// Chose says which agent a new config got from what is installed.
	Chose string `json:"chose,omitempty"`
	// NeedsAgent says agents.do is still to be set: the default exec agent names no program.
	NeedsAgent bool `json:"-"`
}

// cliState are the places each agent CLI keeps its own state (login, sessions, settings),
// which it must write even when confined: init lists them in sandbox.allow_write for the CLI it
// chooses, so the first confined run of it works.
var cliState = map[string][]string{
	config.AgentClaude:   {"~/.claude", "~/.claude.json"},
	config.AgentCodex:    {"~/.codex"},
	config.AgentGemini:   {"~/.gemini"},
	config.AgentOpencode: {"~/.local/share/opencode", "~/.config/opencode"},
}

// firstInstalledCLI is the first agent CLI on PATH, in the order of preference.
func firstInstalledCLI() (kind, path string) {
	for _, k := range []string{config.AgentClaude, config.AgentCodex, config.AgentGemini, config.AgentOpencode} {
		if p, err := exec.LookPath(k); err == nil {
			return k, p
		}
	}
	return "", ""
}

// InitOptions are the choices of `git norma init`; its tags are that command's flags.
type InitOptions struct {
	DisplayNotes bool `help:"Show the journal notes in plain git log (adds refs/notes/norma to notes.displayRef)."`
	Hooks        bool `help:"Also install git-norma's git hooks (see git norma hooks install)."`
	Beads        bool `help:"Also create a Beads workspace with bd init (refused while changes are staged: bd init commits the whole index)."`
	BeadsHooks   bool `help:"With --beads: let bd install its git hooks (core.hooksPath)."`
	BeadsAgents  bool `help:"With --beads: let bd write AGENTS.md, CLAUDE.md and .claude/."`
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
		return InitResult{}, withKind(ErrEnvironment, err)
	}
	res := InitResult{Root: repo.Root}
	for _, d := range []string{repo.NormaDir(), repo.Path("locks"), repo.Path("runs")} {
		if err := res.mkdir(d); err != nil {
			return res, err
		}
	}
	if err := res.writeOnce(repo.Path(".gitignore"), []byte(gitignoreContent)); err != nil {
		return res, err
	}
	initial := config.Default()
	if kind, path := firstInstalledCLI(); kind != "" {
		initial.Agents.Do = config.Agent{Type: kind, Timeout: initial.Agents.Do.Timeout}
		initial.Sandbox.AllowWrite = cliState[kind]
		res.Chose = fmt.Sprintf("the Do agent is %s (found %s); plan, check and act are built in; confined, it may write its own state (sandbox.allow_write: %s)",
			kind, path, strings.Join(cliState[kind], ", "))
	}
	defaults, _ := json.MarshalIndent(initial, "", "  ")
	if err := res.writeOnce(repo.Path("config.json"), append(defaults, '\n')); err != nil {
		return res, err
	}
	if len(res.Kept) > 0 && res.Kept[len(res.Kept)-1] == filepath.Join(".norma", "config.json") {
		res.Chose = "" // the user's config stands
	}
	cfg, err := loadConfig(repo.Path("config.json"))
	if err != nil {
		return res, err
	}
	res.NeedsAgent = cfg.Agents.Do.Type == config.AgentExec && len(cfg.Agents.Do.Cmd) == 0
	if err := notes.Configure(ctx, repo.Git); err != nil {
		return res, withKind(ErrEnvironment, fmt.Errorf("configure git notes: %w", err))
	}
	if o.DisplayNotes {
		if err := notes.ShowInLog(ctx, repo.Git); err != nil {
			return res, withKind(ErrEnvironment, fmt.Errorf("configure notes.displayRef: %w", err))
		}
	}
	app := &App{Repo: repo, Config: cfg}
	_, statErr := os.Stat(repo.Path("norma.db"))
	st, err := repo.OpenStore(ctx)
	if err != nil {
		return res, err
	}
	st.Close()
	res.note(repo.Path("norma.db"), errors.Is(statErr, os.ErrNotExist))
	if o.Beads {
		if err := res.initBeads(ctx, app, o); err != nil {
			return res, err
		}
	}
	if o.Hooks {
		actions, err := repo.InstallHooks(ctx, false)
		if err != nil {
			return res, err
		}
		for _, a := range actions {
			if a.Result == "created" || a.Result == "chained" || a.Result == "upgraded" {
				res.note(a.Path, true)
			}
		}
	}
	res.Tracker = app.TrackerKind()
	if _, err := exec.LookPath("bd"); err == nil && res.Tracker == "jsonl" {
		res.Hint = "bd is installed: `git norma init --beads` keeps the backlog in Beads"
	}
	return res, nil
}

// initBeads creates the Beads workspace. bd init commits the whole git index, so it only runs
// when nothing is staged — it must never commit the user's half-prepared changes.
func (r *InitResult) initBeads(ctx context.Context, app *App, o InitOptions) error {
	if tracker.BDAvailable(app.Repo.Root) {
		r.note(filepath.Join(app.Repo.Root, ".beads"), false)
		return nil
	}
	if _, err := exec.LookPath("bd"); err != nil {
		return fatalf("install bd (Beads) first, or leave out --beads to use the embedded backlog", "bd is not installed or not on PATH")
	}
	if staged, err := app.Repo.Git.StagedChanges(ctx); err != nil {
		return err
	} else if staged {
		return failf("commit or unstage them first (git restore --staged :/), then run git norma init --beads again",
			"bd init commits the whole git index, and you have staged changes")
	}
	if n := embeddedTasks(app.Repo.Root); n > 0 {
		return failf(fmt.Sprintf("move them into Beads first: bd init --prefix %s --non-interactive --skip-agents --skip-hooks && bd import .beads/issues.jsonl, then run git norma init --beads again", app.Config.IDPrefix),
			"the embedded backlog (.beads/issues.jsonl) holds %d task(s), which bd init does not import: with --beads they would vanish from git norma task list", n)
	}
	out, err := tracker.NewBD(app.Repo.Root).Init(ctx, tracker.InitOptions{Prefix: app.Config.IDPrefix, Hooks: o.BeadsHooks, Agents: o.BeadsAgents})
	if err != nil {
		return failf("", "bd init: %v\n%s", err, out)
	}
	r.note(filepath.Join(app.Repo.Root, ".beads"), true)
	return nil
}

// embeddedTasks counts the records of the embedded backlog (0 when there is none).
func embeddedTasks(root string) int {
	data, err := os.ReadFile(filepath.Join(root, ".beads", "issues.jsonl"))
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}

func (r *InitResult) mkdir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		r.note(dir, false)
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return withKind(ErrEnvironment, fmt.Errorf("create %s: %w", dir, err))
	}
	r.note(dir, true)
	return nil
}

// writeOnce creates path with data unless it exists; user edits are never overwritten.
func (r *InitResult) writeOnce(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		r.note(path, false)
		return nil
	}
	if err != nil {
		return withKind(ErrEnvironment, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return withKind(ErrEnvironment, err)
	}
	r.note(path, true)
	return f.Close()
}

func (r *InitResult) note(path string, created bool) {
	rel, err := filepath.Rel(r.Root, path)
	if err != nil {
		rel = path
	}
	if created {
		r.Created = append(r.Created, rel)
	} else {
		r.Kept = append(r.Kept, rel)
	}
}
