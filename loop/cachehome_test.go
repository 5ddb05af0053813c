package loop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheHomes: a confined agent and a confined check command each get a cache home of
// their own (0700), which they can write; the agent cannot write the checks'.
func TestCacheHomes(t *testing.T) {
	requireLandlock(t)
	root := t.TempDir()
	step, caches := filepath.Join(root, "step"), filepath.Join(root, "cache")
	require.NoError(t, os.Mkdir(step, 0o700))
	ctx, s := confinedCtx(t, step, true)
	s.cfg.CacheDir = caches
	checksCache := filepath.Join(caches, checkCacheDir)

	run := func(ctx context.Context, script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = step
		cmd.Env = append(os.Environ(), "CHECKS="+checksCache)
		out, err := os.CreateTemp(step, "out")
		require.NoError(t, err)
		cmd.Stdout = out
		res, err := RunProcess(ctx, cmd, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, 0, res.ExitCode)
		data, err := os.ReadFile(out.Name())
		require.NoError(t, err)
		return string(data)
	}
	// The checks' cache exists once a check command ran; the agent then tries to plant a file.
	out := run(checkScope(ctx), `mkdir -p "$GOCACHE" && touch "$GOCACHE/x" && echo "$XDG_CACHE_HOME $GOCACHE"`)
	assert.Equal(t, checksCache+" "+filepath.Join(checksCache, "go-build")+"\n", out)
	out = run(ctx, `touch "$XDG_CACHE_HOME/own" && echo "$XDG_CACHE_HOME"; `+
		`touch "$CHECKS/go-build/poison" 2>/dev/null && echo escaped; exit 0`)
	assert.Equal(t, filepath.Join(caches, agentCacheDir)+"\n", out)
	assert.NoFileExists(t, filepath.Join(checksCache, "go-build", "poison"))
	for _, d := range []string{agentCacheDir, checkCacheDir} {
		st, err := os.Stat(filepath.Join(caches, d))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	}
}

// TestWithCacheHome: the cache settings point into the cache home, except a user's own that
// lies in an allow_write path.
func TestWithCacheHome(t *testing.T) {
	env := []string{"PATH=/bin", "GOCACHE=/home/u/.cache/go-build", "NPM_CONFIG_CACHE=/home/u/.npm", "XDG_CACHE_HOME=/shared/cache"}
	got := withCacheHome(env, "/c", []string{"/shared", "/home/u/.cach"})
	assert.ElementsMatch(t, []string{"PATH=/bin", "XDG_CACHE_HOME=/shared/cache",
		"GOCACHE=/c/go-build", "npm_config_cache=/c/npm"}, got)

	got = withCacheHome([]string{"GOCACHE=relative"}, "/c", []string{"/"})
	assert.ElementsMatch(t, []string{"XDG_CACHE_HOME=/c", "GOCACHE=/c/go-build", "npm_config_cache=/c/npm"}, got)
}
