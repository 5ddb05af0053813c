package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// configCounts says whether a change of key (in a config whose remotes are named remotes)
// counts against an agent. Every key counts — settings make git run a program, read more
// config, push elsewhere or stop working in too many ways to list — but those git writes by
// itself during everyday commands, for the user's commands or a parallel run's, which must
// never fail an agent's step nor be undone:
//   - branch.<name>.* is written by git branch (create with tracking, -D, -m), git push -u,
//     git checkout --track. Only which upstream a branch follows is said there; the one way to
//     send work elsewhere through it is a remote that is no configured remote's name (a URL
//     or a path, which git never writes there itself): such a remote or pushRemote counts.
//   - maintenance.* is written by git maintenance register/start.
func configCounts(key, value string, remotes []string) bool {
	section, rest, _ := strings.Cut(key, ".")
	switch section {
	case "maintenance":
		return false
	case "branch":
		i := strings.LastIndexByte(rest, '.')
		if i < 0 {
			return true
		}
		switch rest[i+1:] {
		case "remote", "pushremote":
			return value != "." && !slices.Contains(remotes, value)
		}
		return false
	}
	return true
}

// configRemotes are the names of the remotes a config defines.
func configRemotes(entries []git.ConfigEntry) []string {
	var out []string
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Key, "remote."); ok {
			if i := strings.LastIndexByte(rest, '.'); i > 0 && !slices.Contains(out, rest[:i]) {
				out = append(out, rest[:i])
			}
		}
	}
	return out
}

// configChanges lists, sorted, the keys whose values (all of them, in order) differ between
// two versions of a config and count (configCounts, judged by both versions' remotes).
func configChanges(before, after []git.ConfigEntry) []string {
	remotes := append(configRemotes(before), configRemotes(after)...)
	values := func(entries []git.ConfigEntry) map[string][]string {
		m := map[string][]string{}
		for _, e := range entries {
			m[e.Key] = append(m[e.Key], e.Value)
		}
		return m
	}
	b, a := values(before), values(after)
	var changed []string
	for _, k := range sortedKeys(b, a) {
		counts := func(v string) bool { return configCounts(k, v, remotes) }
		if !slices.Equal(b[k], a[k]) && (slices.ContainsFunc(b[k], counts) || slices.ContainsFunc(a[k], counts)) {
			changed = append(changed, k)
		}
	}
	return changed
}

// restoreConfig sets each of keys back to its values in before, through git config on that
// file alone, so every other setting — one the user made meanwhile included — stays.
func restoreConfig(ctx context.Context, g git.Runner, path string, before []git.ConfigEntry, keys []string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	file := git.ConfigFile{Git: g, Path: path}
	for _, k := range keys {
		err := file.Unset(ctx, k)
		if err != nil && git.ExitCodeOf(err) != 5 { // 5: the key was not set
			return err
		}
		for _, e := range before {
			if e.Key != k {
				continue
			}
			if err := file.Add(ctx, k, e.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// configChange compares a config file with the one saved and sets back the keys that changed
// and count; it returns what it found, or "". Unchanged bytes, the usual case, cost no git
// process; a file git can no longer read is written back whole.
func (g *Guard) configChange(ctx context.Context, saved savedFile) string {
	now := saveFile(saved.path)
	if saved.same(now) {
		return ""
	}
	parse := func(f savedFile) (entries []git.ConfigEntry, err error) {
		switch {
		case f.irregular:
			return nil, errors.New("not a file git-norma reads")
		case !f.absent:
			entries, err = g.Git.ParseConfig(ctx, f.data)
		}
		return entries, err
	}
	before, errBefore := parse(saved)
	after, errAfter := parse(now)
	if errBefore != nil || errAfter != nil || saved.link != now.link {
		// Keys cannot be set back in a file git does not read, nor through a link made or
		// moved meanwhile (git config would write where it points): the whole file goes back.
		what := "no longer a config git reads"
		if saved.link != now.link {
			what = "a symbolic link made, moved or removed"
		}
		g.keep(now)
		return fmt.Sprintf("%s: %s (%s)", g.rel(saved.path), what, outcome(saved.restore(), "restored", "could not restore: "))
	}
	keys := configChanges(before, after)
	if len(keys) == 0 {
		if saved.absent || now.absent || saved.mode == now.mode {
			return ""
		}
		// The same settings, but writable by others now: anyone could add to them.
		fate := outcome(os.Chmod(saved.path, saved.mode), "restored", "could not restore: ")
		return fmt.Sprintf("%s: mode %v, was %v (%s)", g.rel(saved.path), now.mode, saved.mode, fate)
	}
	fate, err := "set back", error(nil)
	g.keep(now)
	// Setting a key back unsets it, then adds its old values: killed between the two, the
	// guard would leave the old values nowhere but here.
	g.keepAs(saved, ".before-the-step")
	if now.absent {
		fate, err = "restored", saved.restore() // removed: nothing to set keys in
	} else if err = restoreConfig(ctx, g.Git, saved.path, before, keys); err != nil {
		// git config refused (a config.lock left in place, say): the whole file goes back.
		fate, err = "restored", saved.restore()
	}
	return fmt.Sprintf("%s: %s (%s)", g.rel(saved.path), strings.Join(keys, ", "), outcome(err, fate, "could not restore: "))
}
