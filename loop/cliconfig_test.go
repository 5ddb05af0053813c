package loop

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreCLIConfig: a link put in place of a settings file is removed, never written
// through; a ~/.claude.json left unparsable comes back whole; the keys a CLI fills with empty
// values in a new project are no change; a file outside allow_write is not watched.
func TestRestoreCLIConfig(t *testing.T) {
	c := &CLISettings{}
	home := t.TempDir()
	t.Setenv("HOME", home)
	write := func(rel, data string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(home, rel)), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(home, rel), []byte(data), 0o600))
	}
	write(".claude/settings.json", `{"model":"opus"}`)
	write(".claude.json", `{"projects":{"/a":{"mcpServers":{}}}}`)
	write(".gemini/settings.json", `{}`)
	write("victim", "keep")
	snap := c.snapshot([]string{filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")})
	require.Len(t, snap, 3) // the two settings files of ~/.claude, and ~/.claude.json

	claudeJSON := `{"projects":{"/a":{"mcpServers":{}},"/b":{"mcpServers":{},"enabledMcpjsonServers":[]}},"n":2}`
	write(".claude.json", claudeJSON)
	assert.Empty(t, c.restore(snap, t.TempDir()))

	snap = c.snapshot([]string{filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")})

	require.NoError(t, os.Remove(filepath.Join(home, ".claude/settings.json")))
	require.NoError(t, os.Symlink(filepath.Join(home, "victim"), filepath.Join(home, ".claude/settings.json")))
	write(".claude.json", `{"mcpServers":`)
	write(".gemini/settings.json", `{"hooks":{}}`)
	changed := c.restore(snap, t.TempDir())
	require.Len(t, changed, 2)
	assert.Equal(t, "~/.claude/settings.json (restored)", changed[0], "a link is not kept")
	assert.Regexp(t, `^~/\.claude\.json \(not JSON; restored; the file it replaced is kept as .+/\.claude\.json\)$`, changed[1])
	for rel, want := range map[string]string{".claude/settings.json": `{"model":"opus"}`, ".claude.json": claudeJSON,
		"victim": "keep", ".gemini/settings.json": `{"hooks":{}}`} {
		data, err := os.ReadFile(filepath.Join(home, rel))
		require.NoError(t, err)
		assert.Equal(t, want, string(data), rel)
	}
	st, err := os.Lstat(filepath.Join(home, ".claude/settings.json"))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular())
}

// TestRestoreCLIConfigSideBySide: a step that starts while another step's change is there
// (loop --parallel) does not put that change back once the other step's end undid it.
func TestRestoreCLIConfigSideBySide(t *testing.T) {
	c := &CLISettings{}
	home := t.TempDir()
	t.Setenv("HOME", home)
	settings := filepath.Join(home, ".claude", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(settings), 0o700))
	require.NoError(t, os.WriteFile(settings, []byte("{}"), 0o600))
	allow := []string{filepath.Join(home, ".claude")}

	first := c.snapshot(allow)
	require.NoError(t, os.WriteFile(settings, []byte(`{"hooks":"evil"}`), 0o600)) // the first step's agent
	second := c.snapshot(allow)
	assert.Len(t, c.restore(first, t.TempDir()), 1)
	assert.Empty(t, c.restore(second, t.TempDir()))
	data, err := os.ReadFile(settings)
	require.NoError(t, err)
	assert.Equal(t, "{}", string(data))
}

// TestRestoreCLIConfigKeepDirLink: a step's processes may write its directory; a link they put
// in place of the directory the replaced file is kept in is never written through (git-norma
// would otherwise replace a file of that name wherever it pointed, with their content).
func TestRestoreCLIConfigKeepDirLink(t *testing.T) {
	c := &CLISettings{}
	home := t.TempDir()
	t.Setenv("HOME", home)
	settings := filepath.Join(home, ".gemini", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(settings), 0o700))
	require.NoError(t, os.WriteFile(settings, []byte("{}"), 0o600))
	victim := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(victim, ".gemini_settings.json"), []byte("the user's"), 0o600))
	keep := filepath.Join(t.TempDir(), "cli-settings")
	require.NoError(t, os.Symlink(victim, keep))

	snap := c.snapshot([]string{filepath.Join(home, ".gemini")})
	require.NoError(t, os.WriteFile(settings, []byte("anything at all"), 0o600))
	changed := c.restore(snap, keep)
	require.Len(t, changed, 1)
	assert.NotContains(t, changed[0], victim)
	data, err := os.ReadFile(filepath.Join(victim, ".gemini_settings.json"))
	require.NoError(t, err)
	assert.Equal(t, "the user's", string(data))
	data, err = os.ReadFile(settings)
	require.NoError(t, err)
	assert.Equal(t, "{}", string(data))
}

// TestRestoreCLIConfigThroughLink: a settings file that is the user's link (dotfiles) is written
// through by a confined process when sandbox.allow_write names it (Landlock opens the rule's
// path through the link): what changed behind the link is put back behind it, the link kept.
func TestRestoreCLIConfigThroughLink(t *testing.T) {
	c := &CLISettings{}
	home := t.TempDir()
	t.Setenv("HOME", home)
	real := filepath.Join(home, "dotfiles", "claude.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o700))
	require.NoError(t, os.WriteFile(real, []byte(`{"n":1}`), 0o600))
	require.NoError(t, os.Symlink(real, filepath.Join(home, ".claude.json")))

	snap := c.snapshot([]string{filepath.Join(home, ".claude.json")})
	require.NoError(t, os.WriteFile(real, []byte(`{"n":2,"mcpServers":{"x":{"command":"evil"}}}`), 0o600))
	changed := c.restore(snap, t.TempDir())
	require.Len(t, changed, 1)
	assert.Contains(t, changed[0], "mcpServers")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":2}`, string(data))
	l, err := os.Readlink(filepath.Join(home, ".claude.json"))
	require.NoError(t, err)
	assert.Equal(t, real, l)

	// A link put on the way since (the link's target made a link to a file of the user's) is
	// never written through.
	victim := filepath.Join(home, ".bashrc")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o600))
	snap = c.snapshot([]string{filepath.Join(home, ".claude.json")})
	require.NoError(t, os.Remove(real))
	require.NoError(t, os.Symlink(victim, real))
	assert.Len(t, c.restore(snap, t.TempDir()), 1)
	data, err = os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
}
