package loop

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Confined processes may not write the home directory, where build tools keep their caches
// (go's ~/.cache/go-build, pip's ~/.cache/pip, npm's ~/.npm): `go test ./...` would fail. So
// each confined process gets a cache home of its own under Sandbox.CacheDir, kept across steps
// and runs: agents one, check commands another. Agent-written code runs in the checks, so an
// agent must not prepare the cache they use; nor may it reach the user's own.
const (
	agentCacheDir = "agents"
	checkCacheDir = "checks"
)

// cacheVar is an environment variable that places a tool's cache, and where it goes in the
// cache home ("" for the home itself). Alias names the same setting under other spellings.
type cacheVar struct {
	name, sub string
	aliases   []string
}

// cacheVars are the caches confined processes commonly write: XDG_CACHE_HOME covers pip,
// yarn and every tool that follows the XDG spec or Go's os.UserCacheDir; go and npm have
// their own settings (GOCACHE set in `go env -w` would win over XDG_CACHE_HOME).
var cacheVars = []cacheVar{
	{name: "XDG_CACHE_HOME"},
	{name: "GOCACHE", sub: "go-build"},
	{name: "npm_config_cache", sub: "npm", aliases: []string{"NPM_CONFIG_CACHE"}},
}

// cacheHome is the cache home of check commands (check) or agents, created 0700 if missing.
func (s *stepSandbox) cacheHome(check bool) (string, error) {
	sub := agentCacheDir
	if check {
		sub = checkCacheDir
	}
	home := filepath.Join(s.cfg.CacheDir, sub)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", err
	}
	return home, nil
}

// withCacheHome points env's cache settings into home. A setting the user made that lies in
// a path of allowWrite is kept: the user chose to let confined processes share that cache.
func withCacheHome(env []string, home string, allowWrite []string) []string {
	for _, v := range cacheVars {
		names := append([]string{v.name}, v.aliases...)
		if value, ok := LookupEnv(env, names...); ok && underAny(value, allowWrite) {
			continue
		}
		env = dropEnv(env, names)
		env = append(env, v.name+"="+filepath.Join(home, v.sub))
	}
	return env
}

// LookupEnv is the value the last of names has in env (the one a process sees).
func LookupEnv(env []string, names ...string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		for _, n := range names {
			if value, ok := strings.CutPrefix(env[i], n+"="); ok {
				return value, true
			}
		}
	}
	return "", false
}

func dropEnv(env []string, names []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// underAny says whether the absolute path p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	p = filepath.Clean(p)
	for _, d := range dirs {
		d = filepath.Clean(d)
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) || d == string(filepath.Separator) {
			return true
		}
	}
	return false
}

// freshCachesKey marks the context of check commands that must not see what earlier ones
// cached (see VerifyTree): they share an empty cache home of their own in the private
// directory, made on first use — a new one for every confirmation, so none sees another's.
type freshCachesKey struct{}

type freshCacheHome struct {
	once sync.Once
	path string
	err  error
}

// freshCachePrefix starts the name of a confirmation's cache home (privateDir.empty removes
// them with the step).
const freshCachePrefix = "cache-"

// FreshCaches marks ctx so that the check commands started with it share an empty cache home of
// their own instead of the checks' shared one (see freshCachesKey).
func FreshCaches(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshCachesKey{}, &freshCacheHome{})
}

// in makes the home in the private directory on first use.
func (h *freshCacheHome) in(private string) (string, error) {
	h.once.Do(func() { h.path, h.err = os.MkdirTemp(private, freshCachePrefix) })
	return h.path, h.err
}

// dirState is what says a directory was changed: its inode and its status change time, which
// no process can set (the modification time, touch sets back).
type dirState struct {
	ino   uint64
	ctime syscall.Timespec
}

// checksCache says the checks' shared cache home in ctx's sandbox holds anything: what checks
// of earlier commits built, which their code could have prepared (a Go build cache entry under
// the action id of another file's build). Modes a check took away are given back first
// (Landlock does not govern chmod, and tools still open entries by name); a directory still
// unreadable counts as used. state lets the caller see a parallel run's checks (another
// task's code) write and empty it meanwhile.
func checksCache(ctx context.Context) (used bool, state dirState) {
	s, _ := ctx.Value(stepSandboxKey{}).(*stepSandbox)
	if s == nil || !s.cfg.Landlock || s.cfg.CacheDir == "" {
		return false, dirState{}
	}
	dir := filepath.Join(s.cfg.CacheDir, checkCacheDir)
	st, err := os.Lstat(dir)
	if err == nil && st.IsDir() && st.Mode().Perm()&0o700 != 0o700 {
		_ = os.Chmod(dir, st.Mode().Perm()|0o700)
		st, err = os.Lstat(dir)
	}
	if err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			state = dirState{ino: sys.Ino, ctime: sys.Ctim}
		}
	}
	entries, err := os.ReadDir(dir)
	return len(entries) > 0 || err != nil && !os.IsNotExist(err), state
}
