package gitnorma

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// configEntry is one setting of a git config file: its canonical key (section and key
// lowercased, a subsection as written) and its value as git reads it.
type configEntry struct {
	Key, Value string
}

// configEntries reads a git config text as far as the guard needs: sections with or without a
// quoted subsection (and the old [section.sub] form), comments, keys without a value (true),
// quoted values, escapes, values continued on the next line. Entries keep their order.
func configEntries(data []byte) []configEntry {
	var out []configEntry
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && sc.Scan() {
			line = strings.TrimSuffix(line, "\\") + sc.Text()
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			head, rest, _ := strings.Cut(line[1:], "]")
			name, sub, quoted := strings.Cut(head, " ")
			if quoted {
				section = strings.ToLower(strings.TrimSpace(name)) + "." + unquoteSubsection(strings.TrimSpace(sub))
			} else if top, dotted, ok := strings.Cut(name, "."); ok {
				section = strings.ToLower(top) + "." + strings.ToLower(dotted) // [section.sub] is lowercased by git
			} else {
				section = strings.ToLower(strings.TrimSpace(name))
			}
			if line = strings.TrimSpace(rest); line == "" {
				continue // a key may follow the header on the same line
			}
		}
		key, value, hasValue := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		v := "true"
		if hasValue {
			v = configValue(value)
		}
		out = append(out, configEntry{Key: section + "." + key, Value: v})
	}
	return out
}

func unquoteSubsection(s string) string {
	s = strings.TrimPrefix(strings.TrimSuffix(s, `"`), `"`)
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
}

// configValue is a raw value as git reads it: quotes removed, escapes applied, an unquoted
// comment cut off, surrounding blanks trimmed.
func configValue(raw string) string {
	var b strings.Builder
	quoted := false
	pendingSpace := ""
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '"':
			quoted = !quoted
			continue
		case c == '\\' && i+1 < len(raw):
			i++
			b.WriteString(pendingSpace)
			pendingSpace = ""
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(raw[i])
			}
			continue
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimLeft(b.String(), " \t")
		case !quoted && (c == ' ' || c == '\t'):
			pendingSpace += string(c)
			continue
		}
		b.WriteString(pendingSpace)
		pendingSpace = ""
		b.WriteByte(c)
	}
	return strings.TrimLeft(b.String(), " \t")
}

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
func configRemotes(entries []configEntry) []string {
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
func configChanges(before, after []configEntry) []string {
	remotes := append(configRemotes(before), configRemotes(after)...)
	values := func(entries []configEntry) map[string][]string {
		m := map[string][]string{}
		for _, e := range entries {
			m[e.Key] = append(m[e.Key], e.Value)
		}
		return m
	}
	b, a := values(before), values(after)
	var changed []string
	for _, m := range []map[string][]string{b, a} {
		for k := range m {
			if slices.Equal(b[k], a[k]) || slices.Contains(changed, k) {
				continue
			}
			counts := false
			for _, v := range append(slices.Clone(b[k]), a[k]...) {
				counts = counts || configCounts(k, v, remotes)
			}
			if counts {
				changed = append(changed, k)
			}
		}
	}
	sort.Strings(changed)
	return changed
}

// restoreConfig sets each of keys back to its values in before, through git config on that
// file alone, so every other setting — one the user made meanwhile included — stays.
func (r *Repo) restoreConfig(ctx context.Context, path string, before []configEntry, keys []string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	for _, k := range keys {
		err := r.Git.ConfigFileUnset(ctx, path, k)
		if err != nil && git.ExitCodeOf(err) != 5 { // 5: the key was not set
			return err
		}
		for _, e := range before {
			if e.Key != k {
				continue
			}
			if err := r.Git.ConfigFileAdd(ctx, path, k, e.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
