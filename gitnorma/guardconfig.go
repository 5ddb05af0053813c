package gitnorma

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"
)

// configProgramsLine is the guard's line for one of the repository's shared config files: a
// digest of every setting in it but those everyday git commands rewrite (branch tracking,
// remote URLs, identity, colours) — settings can make git run a program or read more config in
// too many ways to list them (an alias, core.hooksPath, a filter, a credential helper,
// extensions.worktreeConfig then a config.worktree...). Everyday rewrites of the file — by
// git branch -D, git remote add, git push -u, a user's or a parallel run's — do not count:
// none of them may fail an agent's step.
func configProgramsLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "absent\t" + path
	}
	sum := sha256.Sum256([]byte(strings.Join(programSettings(data), "\n")))
	return fmt.Sprintf("programs %x\t%s", sum[:8], path)
}

// programSettings lists, sorted, the "section.subsection.key=value" lines of a git config text
// that are not everyday settings (see everyday). It reads git's syntax as far as that needs:
// sections with or without a quoted subsection, comments, keys without a value, values
// continued on the next line.
func programSettings(data []byte) []string {
	var out []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		for strings.HasSuffix(line, "\\") && sc.Scan() {
			line = strings.TrimSuffix(line, "\\") + sc.Text()
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			head, rest, _ := strings.Cut(line[1:], "]")
			name, sub, quoted := strings.Cut(head, " ")
			section = strings.ToLower(strings.TrimSpace(name))
			if quoted {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			if line = strings.TrimSpace(rest); line == "" {
				continue // a key may follow the header on the same line
			}
		}
		key, value, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !everyday(section, key) {
			out = append(out, section+"."+key+"="+strings.TrimSpace(value))
		}
	}
	sort.Strings(out)
	return out
}

// everydaySections hold nothing that runs a program, and everyday git commands write them.
var everydaySections = map[string]bool{
	"branch": true, "user": true, "color": true, "advice": true, "gc": true, "pull": true,
	"push": true, "fetch": true, "init": true, "rerere": true, "maintenance": true,
	"status": true, "log": true, "notes": true, "pack": true, "index": true, "feature": true,
	"column": true, "i18n": true, "checkout": true, "clone": true,
}

// everydayKeys are the harmless keys of sections that also hold keys that run programs.
var everydayKeys = map[string]map[string]bool{
	"remote": {"url": true, "pushurl": true, "fetch": true, "push": true, "tagopt": true, "prune": true, "mirror": true},
	"core": {"repositoryformatversion": true, "filemode": true, "bare": true, "logallrefupdates": true,
		"ignorecase": true, "precomposeunicode": true, "symlinks": true, "autocrlf": true, "eol": true,
		"safecrlf": true, "abbrev": true, "quotepath": true, "untrackedcache": true},
	"submodule": {"url": true, "active": true},
}

func everyday(section, key string) bool {
	top, _, _ := strings.Cut(section, ".")
	return everydaySections[top] || everydayKeys[top][key]
}
