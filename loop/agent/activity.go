package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// activityScan is how much of the end of each log Activity reads.
const activityScan = 16 << 10

// Activity says in a few words what the step's agent is doing now, from the newest lines of
// its logs in logDir: for the agent CLIs, their JSON event stream (the tool it called and on
// what, or what it said); for exec agents and check commands, their last line. "" before
// anything was written.
func Activity(logDir string) string {
	newest, newestAt := "", int64(-1)
	for _, name := range []string{"stdout.txt", "stderr.txt"} {
		path := filepath.Join(logDir, name)
		st, err := os.Stat(path)
		if err != nil || st.Size() == 0 {
			continue
		}
		if a := lastActivity(path); a != "" && st.ModTime().UnixNano() > newestAt {
			newest, newestAt = a, st.ModTime().UnixNano()
		}
	}
	return newest
}

// lastActivity is the activity of the newest line of the file that says something.
func lastActivity(path string) string {
	buf, from := fileTail(path, 0, activityScan)
	lines := strings.Split(string(buf), "\n")
	if from > 0 {
		lines = lines[1:] // cut mid-line
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if a := activityOf(lines[i]); a != "" {
			return a
		}
	}
	return ""
}

// activityOf reads one line: plain text as it is, a JSON event of an agent CLI as the tool it
// calls ("Edit main.go", "$ go test ./..."), the files it changes, or what it says.
func activityOf(line string) string {
	line = strings.TrimSpace(line)
	if line == "" {
		return ""
	}
	var v any
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &v) != nil {
		return loop.OneLine(line, 100)
	}
	return loop.OneLine(describe(v, 0), 100)
}

// describe finds, depth first, the most telling part of an event: a tool call with its
// argument, a command, a file change, or a message's text. The CLIs nest these differently
// (claude: message.content[].tool_use; codex: item.command or item.changes; gemini:
// tool_name and parameters; opencode: part.tool and part.state.input), so the names are
// looked for wherever they are.
func describe(v any, depth int) string {
	if depth > 6 {
		return ""
	}
	switch v := v.(type) {
	case map[string]any:
		if tool := firstString(v, "tool_name", "tool"); tool != "" {
			return strings.TrimSpace(tool + " " + argument(v))
		}
		if v["type"] == "tool_use" {
			if name, _ := v["name"].(string); name != "" {
				return strings.TrimSpace(name + " " + argument(v))
			}
		}
		if cmd, _ := v["command"].(string); cmd != "" {
			return "$ " + cmd
		}
		if changes, ok := v["changes"].([]any); ok {
			var paths []string
			for _, c := range changes {
				if m, ok := c.(map[string]any); ok {
					if p, _ := m["path"].(string); p != "" {
						paths = append(paths, filepath.Base(p))
					}
				}
			}
			if len(paths) > 0 {
				return "edit " + strings.Join(paths, ", ")
			}
		}
		for _, key := range []string{"message", "item", "part", "content", "state"} {
			if d := describe(v[key], depth+1); d != "" {
				return d
			}
		}
		if t := firstString(v, "text"); t != "" {
			return t
		}
		if v["role"] == "assistant" {
			return firstString(v, "content")
		}
	case []any:
		for i := len(v) - 1; i >= 0; i-- {
			if d := describe(v[i], depth+1); d != "" {
				return d
			}
		}
	}
	return ""
}

// argument is what a tool call works on: a file, a command, a pattern or an address.
func argument(call map[string]any) string {
	for _, key := range []string{"input", "parameters", "args", "state"} {
		m, ok := call[key].(map[string]any)
		if !ok {
			continue
		}
		if in, ok := m["input"].(map[string]any); ok {
			m = in // opencode: part.state.input
		}
		if p := firstString(m, "file_path", "filePath", "path", "absolute_path"); p != "" {
			return filepath.Base(p)
		}
		if s := firstString(m, "command", "pattern", "query", "url", "description"); s != "" {
			return s
		}
	}
	return ""
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
