package loop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// cliConfigFiles are the agent CLIs' settings (relative to the home directory) that name
// commands the CLI runs: hooks, MCP servers, notify, plugins. sandbox.allow_write opens the
// CLIs' state places so that a confined CLI can keep its state, but a command a confined
// process adds there would run unconfined in the user's next interactive session of the CLI.
// keys marks the file the CLI itself rewrites on every run: only its command-bearing keys are
// watched (cliKeys); the CLIs do not write the others during a headless run.
var cliConfigFiles = []struct {
	rel  string
	keys bool
}{
	{".claude/settings.json", false}, {".claude/settings.local.json", false}, {".claude.json", true},
	{".codex/config.toml", false}, {".gemini/settings.json", false},
	{".config/opencode/opencode.json", false}, {".config/opencode/opencode.jsonc", false}, {".config/opencode/config.json", false},
}

// cliKeys are the command-bearing keys of ~/.claude.json, at its top level and in each of
// its projects.
var cliKeys = []string{"mcpServers", "hooks", "enabledMcpjsonServers", "enableAllProjectMcpServers"}

// Guard records what the agent CLIs' settings under allowWrite hold, before processes
// git-norma starts outside a step (worktree.setup) run; restore puts back what they changed
// since, keeping the files it replaces in keepDir (empty: a new temporary directory), and
// returns the guard violation (nil: none).
func (c *CLISettings) Guard(allowWrite []string) (restore func(who, keepDir string) error) {
	snap := c.snapshot(allowWrite)
	return func(who, keepDir string) error {
		if changed := c.restore(snap, keepDir); len(changed) > 0 {
			return cliConfigErr(who, changed, nil)
		}
		return nil
	}
}

// cliConfigErr is the guard violation of who, which changed the CLI settings named in changed;
// one agentErr already reports stays in it.
func cliConfigErr(who string, changed []string, agentErr error) error {
	return &ProtocolError{Kind: ErrKindGuard, Msg: guardFinding(agentErr, fmt.Sprintf("%s wrote commands into an agent CLI's settings, which its next session would run unconfined: %s",
		who, strings.Join(changed, ", ")))}
}

// guardFinding is msg after the guard finding agentErr already reports, if it does (the
// fallback guard's, or another of the step's): none is lost.
func guardFinding(agentErr error, msg string) string {
	var pe *ProtocolError
	if errors.As(agentErr, &pe) && pe.Kind == ErrKindGuard {
		return pe.Msg + "; " + msg
	}
	return msg
}

// cliFile is a CLI settings file as a step found it.
type cliFile struct {
	path string
	// rel is its path in the home directory.
	rel  string
	keys bool
	// link is the target of a symbolic link; data the contents of the file (through the link:
	// a rule of sandbox.allow_write naming the link opens its target to confined processes).
	link, data []byte
	// real is the file a link leads to (filepath.EvalSymlinks).
	real   string
	exists bool
}

// CLISettings is what the agent CLIs' settings files held when the first of a process's
// groups of confined processes now under way started (loop --parallel runs steps side by
// side): a group that starts while another's change is there must not take it for the state
// to put back once the other's is undone. One per process, shared by its runs (the Sandbox of
// each); a nil one is a group's own. snapshot starts a group, restore ends it.
type CLISettings struct {
	mu     sync.Mutex
	groups int
	files  map[string]cliFile
	// modes are the modes of Sandbox.Modes, recorded like files (a step started beside one
	// that took a hook's execute bit must not put that back once the other's end undid it).
	modes map[string]os.FileMode
}

// snapshot records the CLI settings files in the places allowWrite opens, for a group of
// processes about to start; restore must follow.
func (c *CLISettings) snapshot(allowWrite []string) []cliFile {
	if c == nil {
		c = &CLISettings{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups == 0 {
		c.files, c.modes = map[string]cliFile{}, map[string]os.FileMode{}
	}
	c.groups++
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return nil
	}
	var files []cliFile
	for _, f := range cliConfigFiles {
		path := filepath.Join(home, f.rel)
		for _, w := range allowWrite {
			if rel, err := filepath.Rel(filepath.Clean(w), path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				file, ok := c.files[path]
				if !ok {
					file = readCLIFile(path, f.keys)
					file.rel = f.rel
					c.files[path] = file
				}
				files = append(files, file)
				break
			}
		}
	}
	return files
}

// modesOf are the modes of paths (regular files and directories) when the first of the
// groups now under way started; snapshot must come first.
func (c *CLISettings) modesOf(paths []string) map[string]os.FileMode {
	if c == nil {
		c = &CLISettings{modes: map[string]os.FileMode{}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	modes := map[string]os.FileMode{}
	for _, path := range paths {
		mode, ok := c.modes[path]
		if !ok {
			st, err := os.Lstat(path)
			if err != nil || !st.Mode().IsRegular() && !st.IsDir() {
				continue
			}
			mode = st.Mode()
			c.modes[path] = mode
		}
		modes[path] = mode
	}
	return modes
}

func readCLIFile(path string, keys bool) cliFile {
	f := cliFile{path: path, keys: keys}
	st, err := os.Lstat(path)
	if err != nil {
		return f
	}
	f.exists = true
	if st.Mode()&os.ModeSymlink != 0 {
		l, _ := os.Readlink(path)
		f.link = []byte(l)
		f.real, _ = filepath.EvalSymlinks(path)
	}
	f.data, _ = os.ReadFile(path)
	return f
}

// restore puts back what changed in the files since snap, ending its group, and names each change (file, and key for ~/.claude.json) with its fate. The
// file it replaces is kept in keepDir first: the change may be the user's own (a session of
// the CLI they use meanwhile).
func (c *CLISettings) restore(snap []cliFile, keepDir string) []string {
	if c == nil {
		c = &CLISettings{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.groups = max(c.groups-1, 0)
	var changed []string
	for _, before := range snap {
		now := readCLIFile(before.path, before.keys)
		now.rel = before.rel
		name := "~/" + filepath.ToSlash(before.rel)
		// The user's own link (dotfiles), still there: what changed is behind it, put back there.
		sameLink := before.link != nil && bytes.Equal(now.link, before.link) && now.real == before.real && now.real != ""
		if before.keys && before.exists && now.exists && (sameLink || before.link == nil && now.link == nil) {
			if keys := changedCLIKeys(before.data, now.data); keys != nil {
				fate := keepCLIFile(now, sameLink, &keepDir, func() error { return restoreCLIKeys(before, now.data, keys) })
				changed = append(changed, name+" ("+strings.Join(keys, ", ")+"; "+fate+")")
			}
			continue
		}
		if now.exists != before.exists || !bytes.Equal(now.link, before.link) || !bytes.Equal(now.data, before.data) {
			changed = append(changed, name+" ("+keepCLIFile(now, sameLink, &keepDir, func() error {
				if sameLink {
					return writeBack(before, before.data)
				}
				return restoreCLIFile(before)
			})+")")
		}
	}
	return changed
}

// keepCLIFile keeps a copy of f (a regular file, or what the user's link leads to) in
// *keepDir (made if empty), then restores, and says what became of both.
func keepCLIFile(f cliFile, userLink bool, keepDir *string, restore func() error) string {
	var kept string
	if f.exists && (f.link == nil || userLink) {
		var err error
		if *keepDir != "" {
			err = os.MkdirAll(*keepDir, 0o700)
			// The step's processes may write its directory: a link they put there is never
			// written through (it would replace a file of that name wherever it points).
			if st, lerr := os.Lstat(*keepDir); err != nil || lerr != nil || !st.IsDir() {
				*keepDir = ""
			}
		}
		if *keepDir == "" {
			*keepDir, err = os.MkdirTemp("", "git-norma-cli-settings-")
		}
		kept = filepath.Join(*keepDir, strings.ReplaceAll(f.rel, "/", "_"))
		if err != nil || restoreCLIFile(cliFile{path: kept, exists: true, data: f.data}) != nil {
			kept = ""
		}
	}
	if err := restore(); err != nil {
		return "not restored: " + err.Error()
	}
	if kept != "" {
		return "restored; the file it replaced is kept as " + kept
	}
	return "restored"
}

// restoreCLIFile puts the file back as it was. What is there now is removed first, so that
// nothing is written through a link a process put in its place.
func restoreCLIFile(f cliFile) error {
	if err := os.Remove(f.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch {
	case !f.exists:
		return nil
	case f.link != nil:
		return os.Symlink(string(f.link), f.path)
	}
	return WriteNew(f.path, f.data)
}

// cliKeyValues are the command-bearing values of a ~/.claude.json, by key path; empty ones
// (a CLI writes "mcpServers": {} into each new project) are left out. nil: not JSON.
func cliKeyValues(data []byte) map[string]string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	vals := map[string]string{}
	add := func(prefix string, obj map[string]json.RawMessage) {
		for _, k := range cliKeys {
			var buf bytes.Buffer
			if v, ok := obj[k]; ok && json.Compact(&buf, v) == nil && !emptyJSON(buf.String()) {
				vals[prefix+k] = buf.String()
			}
		}
	}
	add("", top)
	var projects map[string]map[string]json.RawMessage
	_ = json.Unmarshal(top["projects"], &projects)
	for p, obj := range projects {
		add("projects."+p+".", obj)
	}
	return vals
}

func emptyJSON(v string) bool {
	switch v {
	case "null", "false", "{}", "[]", `""`:
		return true
	}
	return false
}

// changedCLIKeys are the key paths whose values differ, sorted; ["(not JSON)"] when the file
// no longer parses.
func changedCLIKeys(before, now []byte) []string {
	b, n := cliKeyValues(before), cliKeyValues(now)
	if n == nil && b != nil {
		return []string{"not JSON"}
	}
	var keys []string
	for k, v := range n {
		if b[k] != v {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := n[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// restoreCLIKeys writes the keys' values of before back into the file as it is now, keeping
// the rest of it (the CLI's counters and per-project state). A file that no longer parses
// is put back whole.
func restoreCLIKeys(before cliFile, now []byte, keys []string) error {
	var top map[string]json.RawMessage
	if json.Unmarshal(now, &top) != nil {
		return writeBack(before, before.data)
	}
	var old map[string]json.RawMessage
	_ = json.Unmarshal(before.data, &old)
	var oldProjects, projects map[string]map[string]json.RawMessage
	_ = json.Unmarshal(old["projects"], &oldProjects)
	_ = json.Unmarshal(top["projects"], &projects)
	set := func(dst, src map[string]json.RawMessage, k string) {
		if v, ok := src[k]; ok {
			dst[k] = v
		} else {
			delete(dst, k)
		}
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "projects.") {
			set(top, old, k)
			continue
		}
		i := strings.LastIndex(k, ".")
		p, key := k[len("projects."):i], k[i+1:]
		if projects[p] != nil { // a project gone took its keys along
			set(projects[p], oldProjects[p], key)
		}
	}
	if projects != nil {
		raw, err := json.Marshal(projects)
		if err != nil {
			return err
		}
		top["projects"] = raw
	}
	data, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return err
	}
	return writeBack(before, data)
}

// writeBack puts data in before's file: behind the user's link, when before was one (restore
// writes back there only while the link still leads to the same file, never through a link
// put on the way since), else in a new regular file.
func writeBack(before cliFile, data []byte) error {
	if before.link != nil {
		w, err := os.OpenFile(before.real, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return restoreCLIFile(cliFile{path: before.path, exists: true, data: data})
}
