package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/notes"
)

// initPaths is everything Init creates, in the order it reports them.
var initPaths = []string{".norma", ".norma/locks", ".norma/runs", ".norma/.gitignore", ".norma/config.json", ".norma/norma.db"}

// withUmask sets the process umask for one test, so file modes do not depend on the caller's.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

type fileState struct {
	mode fs.FileMode
	data string
}

// snapshot records the mode and bytes of every file and directory under dir.
func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, "norma.db-shm") || strings.HasSuffix(p, "norma.db-wal") {
			return nil // SQLite's own side files, kept between opens: every open rewrites the index
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := fileState{mode: info.Mode()}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.data = string(data)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = st
		return nil
	}))
	return out
}

// configAll is `git config --get-all key`, one value a line ("" when unset).
func configAll(t *testing.T, r *gittest.Repo, key string) []string {
	t.Helper()
	out, err := r.Git.Output(context.Background(), "config", "--get-all", key)
	if err != nil {
		return nil
	}
	return strings.Split(out, "\n")
}

func TestInitCreates(t *testing.T) {
	withUmask(t, 0o022)
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	root := realPath(t, repo.Dir)

	res, err := Init(ctx, repo.Dir, InitOptions{})
	require.NoError(t, err)
	assert.Equal(t, root, res.Root)
	assert.Equal(t, initPaths, res.Created)
	assert.Empty(t, res.Kept)

	defaults, err := json.MarshalIndent(config.Default(), "", "  ")
	require.NoError(t, err)
	tests := []struct {
		path    string
		dir     bool
		mode    fs.FileMode
		content string // checked when not empty
	}{
		{".norma", true, 0o755, ""},
		{".norma/locks", true, 0o755, ""},
		{".norma/runs", true, 0o755, ""},
		{".norma/.gitignore", false, 0o644, gitignoreContent},
		{".norma/config.json", false, 0o644, string(defaults) + "\n"},
		{".norma/norma.db", false, 0o644, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			info, err := os.Stat(filepath.Join(root, tt.path))
			require.NoError(t, err)
			assert.Equal(t, tt.dir, info.IsDir())
			if tt.path == ".norma/norma.db" {
				// The database's mode is the SQLite driver's; it must not be group or world writable.
				assert.Zero(t, info.Mode().Perm()&0o022, "mode %v", info.Mode().Perm())
				assert.NotZero(t, info.Mode().Perm()&0o600, "mode %v", info.Mode().Perm())
			} else {
				assert.Equal(t, tt.mode, info.Mode().Perm())
			}
			if tt.content != "" {
				data, err := os.ReadFile(filepath.Join(root, tt.path))
				require.NoError(t, err)
				assert.Equal(t, tt.content, string(data))
			}
		})
	}

	cfg, err := loadConfig(filepath.Join(root, ".norma", "config.json"))
	require.NoError(t, err)
	assert.Equal(t, config.Default(), cfg)

	// Only the config and the .gitignore are visible to git; the database and runs are ignored.
	status := repo.Must("status", "--porcelain", "--untracked-files=all")
	assert.Equal(t, "?? .norma/.gitignore\n?? .norma/config.json", status)

	// The store it created opens as an initialised repository.
	app, err := Open(ctx, repo.Dir)
	require.NoError(t, err)
	st, err := app.Repo.OpenStore(ctx)
	require.NoError(t, err)
	st.Close()
}

func TestInitFromAnywhereInTheRepository(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	root := realPath(t, repo.Dir)
	sub := mkdirs(t, repo.Dir, "a", "b")
	wt := filepath.Join(t.TempDir(), "wt")
	repo.Must("worktree", "add", "-q", "-b", "feature", wt)

	tests := []struct {
		name string
		dir  string
	}{
		{"subdirectory", sub},
		{"linked worktree", wt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, ".norma")))
			res, err := Init(ctx, tt.dir, InitOptions{})
			require.NoError(t, err)
			assert.Equal(t, root, res.Root)
			assert.Equal(t, initPaths, res.Created)
			assert.FileExists(t, filepath.Join(root, ".norma", "config.json"))
			assert.NoDirExists(t, filepath.Join(tt.dir, ".norma"))
		})
	}
}

func TestInitIsIdempotent(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// edit runs between the two Inits.
		edit func(t *testing.T, root string)
	}{
		{"unchanged", func(*testing.T, string) {}},
		{"user-edited config", func(t *testing.T, root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, ".norma", "config.json"),
				[]byte("{\n  \"budgets\": {\"max_iterations\": 9},\n  \"commit\": {\"co_author\": \"Agent <agent@example.com>\"}\n}\n"), 0o644))
		}},
		{"user-edited .gitignore", func(t *testing.T, root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, ".norma", ".gitignore"), []byte("*\n"), 0o644))
		}},
		{"run directories and lock file present", func(t *testing.T, root string) {
			mkdirs(t, root, ".norma", "runs", "20260101-000000-ab12", "artifacts")
			require.NoError(t, os.WriteFile(filepath.Join(root, ".norma", "locks", "run.lock"), nil, 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := gittest.NewRepo(t)
			root := realPath(t, repo.Dir)
			_, err := Init(ctx, repo.Dir, InitOptions{})
			require.NoError(t, err)
			tt.edit(t, root)

			before := snapshot(t, filepath.Join(root, ".norma"))
			gitConfig, err := os.ReadFile(filepath.Join(root, ".git", "config"))
			require.NoError(t, err)

			res, err := Init(ctx, repo.Dir, InitOptions{})
			require.NoError(t, err)
			assert.Empty(t, res.Created)
			assert.Equal(t, initPaths, res.Kept)
			assert.Equal(t, before, snapshot(t, filepath.Join(root, ".norma")), "a second init changes no bytes under .norma")
			after, err := os.ReadFile(filepath.Join(root, ".git", "config"))
			require.NoError(t, err)
			assert.Equal(t, string(gitConfig), string(after), "a second init changes no git config")
		})
	}
}

func TestInitKeepsConfigWrittenBeforeInit(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	custom := "{\"tracker\": \"jsonl\", \"id_prefix\": \"proj\"}\n"
	repo.WriteFile(".norma/config.json", custom)

	res, err := Init(ctx, repo.Dir, InitOptions{})
	require.NoError(t, err)
	assert.Contains(t, res.Kept, ".norma/config.json")
	assert.Contains(t, res.Kept, ".norma")
	assert.NotContains(t, res.Created, ".norma/config.json")
	data, err := os.ReadFile(filepath.Join(repo.Dir, ".norma", "config.json"))
	require.NoError(t, err)
	assert.Equal(t, custom, string(data))

	app, err := Open(ctx, repo.Dir)
	require.NoError(t, err)
	assert.Equal(t, "proj", app.Config.IDPrefix)
}

func TestInitRefusesMalformedConfig(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"syntax error", "{\n  \"tracker\": \"auto\",\n  oops\n}\n", "invalid JSON at line 3"},
		{"unknown key", `{"budgets": {"max_iteration": 3}}`, `unknown key "budgets.max_iteration"`},
		{"wrong type", `{"budgets": {"max_iterations": "3"}}`, "budgets.max_iterations: expected an integer"},
		{"invalid value", `{"tracker": "github"}`, "tracker: must be auto, jsonl or beads"},
		{"empty file", ``, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := gittest.NewRepo(t)
			path := filepath.Join(realPath(t, repo.Dir), ".norma", "config.json")
			repo.WriteFile(".norma/config.json", tt.content)

			_, err := Init(ctx, repo.Dir, InitOptions{})
			e := requireFatal(t, err, path, tt.want)
			assert.Contains(t, e.Hint, "config.json")

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.content, string(data), "a malformed config is reported, not overwritten")
		})
	}
}

func TestInitOutsideAWorkTree(t *testing.T) {
	ctx := context.Background()
	gittest.Isolate(t)
	base := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(base))
	plain := mkdirs(t, base, "plain")
	bare := filepath.Join(base, "bare.git")
	gitIn(t, base, "init", "-q", "--bare", bare)

	tests := []struct {
		name, dir, want string
	}{
		{"plain directory", plain, "not a git repository"},
		{"bare repository", bare, "bare repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Init(ctx, tt.dir, InitOptions{})
			require.Error(t, err)
			var e *Error
			require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
			assert.Equal(t, ExitFatal, ExitCode(e))
			assert.Contains(t, err.Error(), tt.want)
			assert.NoDirExists(t, filepath.Join(tt.dir, ".norma"))
		})
	}
}

func TestInitConfiguresNotes(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// preset are `git config --add` pairs set before the first Init.
		preset      [][2]string
		runs        []InitOptions
		wantRewrite []string
		wantDisplay []string
	}{
		{"once", nil, []InitOptions{{}}, []string{notes.RewriteRef}, nil},
		{"twice", nil, []InitOptions{{}, {}}, []string{notes.RewriteRef}, nil},
		{"display notes", nil, []InitOptions{{DisplayNotes: true}}, []string{notes.RewriteRef}, []string{notes.Ref}},
		{"display notes twice", nil, []InitOptions{{DisplayNotes: true}, {DisplayNotes: true}}, []string{notes.RewriteRef}, []string{notes.Ref}},
		{"display notes added on re-run", nil, []InitOptions{{}, {DisplayNotes: true}, {}}, []string{notes.RewriteRef}, []string{notes.Ref}},
		{"user's own refs kept", [][2]string{{"notes.rewriteRef", "refs/notes/commits"}, {"notes.displayRef", "refs/notes/review"}},
			[]InitOptions{{DisplayNotes: true}, {DisplayNotes: true}},
			[]string{"refs/notes/commits", notes.RewriteRef}, []string{"refs/notes/review", notes.Ref}},
		{"already configured by hand", [][2]string{{"notes.rewriteRef", notes.RewriteRef}, {"notes.displayRef", notes.Ref}},
			[]InitOptions{{DisplayNotes: true}}, []string{notes.RewriteRef}, []string{notes.Ref}},
		// an older init (or the user) named the ref exactly, which made git warn on every
		// amend and rebase until the first note: re-running init replaces it with the glob
		{"exact rewrite ref replaced", [][2]string{{"notes.rewriteRef", notes.Ref}},
			[]InitOptions{{}}, []string{notes.RewriteRef}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := gittest.NewRepo(t)
			for _, kv := range tt.preset {
				repo.Must("config", "--add", kv[0], kv[1])
			}
			for _, o := range tt.runs {
				_, err := Init(ctx, repo.Dir, o)
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"cat_sort_uniq"}, configAll(t, repo, "notes.norma.mergeStrategy"))
			assert.Equal(t, tt.wantRewrite, configAll(t, repo, "notes.rewriteRef"))
			assert.Equal(t, tt.wantDisplay, configAll(t, repo, "notes.displayRef"))
		})
	}
}

// requireFatal checks that err is a *Error with exit code 128, a hint, and a message that
// names the file and contains every one of want.
func requireFatal(t *testing.T, err error, path string, want ...string) *Error {
	t.Helper()
	require.Error(t, err)
	var e *Error
	require.True(t, errors.As(err, &e), "error %v (%T) is not a *Error", err, err)
	assert.Equal(t, ExitFatal, ExitCode(e), "exit code of %v", err)
	assert.NotEmpty(t, e.Hint, "hint of %v", err)
	assert.Contains(t, err.Error(), path)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
	return e
}

// A config file that cannot be used stops every command with exit 128, naming the file and
// what to do with it: fix it, or make it readable.
func TestLoadConfigIsAnEnvironmentError(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.json")
	require.NoError(t, os.WriteFile(invalid, []byte(`{"budgets": {"max_iterations": -1}}`), 0o644))
	e := requireFatal(t, func() error { _, err := loadConfig(invalid); return err }(), invalid, "budgets.max_iterations")
	assert.Contains(t, e.Hint, "fix "+invalid)

	unreadable := filepath.Join(dir, "dir.json")
	require.NoError(t, os.Mkdir(unreadable, 0o755))
	e = requireFatal(t, func() error { _, err := loadConfig(unreadable); return err }(), unreadable, "read config")
	assert.Contains(t, e.Hint, "make "+unreadable+" a readable JSON file")
}
