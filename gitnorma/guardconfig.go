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

// configProgramsLine is the guard's line for the repository's shared config: a digest of the
// settings in it that make git run a program or read another file, the way an agent could
// reach beyond its workspace (an alias the user types next, a hooks path, a filter, a
// credential helper). Only those count: git rewrites the file for everyday commands (git
// branch -D, git remote add, git push -u), a user's or a parallel run's, and none of those
// may fail an agent's step.
func configProgramsLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "absent\t" + path
	}
	sum := sha256.Sum256([]byte(strings.Join(programSettings(data), "\n")))
	return fmt.Sprintf("programs %x\t%s", sum[:8], path)
}

// programSettings lists, sorted, the "section.subsection.key=value" lines of a git config text
// whose key runs a program or names another file. It reads git's syntax as far as these keys
// need: sections with or without a quoted subsection, comments, keys without a value.
func programSettings(data []byte) []string {
	var out []string
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
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
		if runsProgram(section, key) {
			out = append(out, section+"."+key+"="+strings.TrimSpace(value))
		}
	}
	sort.Strings(out)
	return out
}

// programKeys are the config keys (the last part of the name) that make git run a program, or
// read more config, whatever their section.
var programKeys = map[string]bool{
	"path": true, "helper": true, "program": true, "command": true, "cmd": true, "textconv": true,
	"clean": true, "smudge": true, "process": true, "driver": true, "sshcommand": true,
	"hookspath": true, "fsmonitor": true, "pager": true, "editor": true, "askpass": true,
	"gitproxy": true, "uploadpack": true, "receivepack": true, "packobjectshook": true,
	"worktree": true, "attributesfile": true, "excludesfile": true,
}

func runsProgram(section, key string) bool {
	top, _, _ := strings.Cut(section, ".")
	return top == "alias" || top == "pager" || programKeys[key]
}
