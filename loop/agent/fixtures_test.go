package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite the synthesized fixtures and SYNTHESIZED.txt under testdata/agents")

// mockAnswers are the loopback mock's answer as the golden fixtures spell it.
var mockAnswers = []string{
	`{"verdict":"pass","summary":"mock final answer"}`,
	`{"verdict": "pass", "summary": "mock final answer"}`,
}

const proseAnswer = "I made the change and all tests pass."

// synthFixture is a fixture derived from a golden one: the same envelope with another
// answer in place of the mock's.
type synthFixture struct {
	name, from string
	// answer replaces the mock answer in every file; last, when set, in .last.txt only.
	answer, last string
	// edit is one more replacement in .stdout (old, new).
	edit [2]string
	// files are the contents of a hand-written fixture (from == "").
	files map[string]string
	note  string
}

func synthFixtures() []synthFixture {
	var out []synthFixture
	sources := map[string]string{"claude": "claude/schema", "codex": "codex/schema", "gemini": "gemini/stream", "opencode": "opencode/text"}
	for _, kind := range CLIKinds {
		for _, role := range loop.Roles {
			out = append(out, synthFixture{name: kind + "/" + string(role) + "-ok", from: sources[kind], answer: string(role)})
		}
	}
	return append(out,
		synthFixture{name: "claude/do-denied", from: "claude/schema", answer: "do",
			edit: [2]string{`"permission_denials":[]`, `"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_26","tool_input":{"command":"git init bashrepo","description":"mock"}}]`},
			note: "with a Bash permission denial"},
		synthFixture{name: "codex/act-stream-only", from: "codex/text", answer: "act", note: "no last-message file"},
		synthFixture{name: "codex/act-last-file", from: "codex/schema", answer: "prose", last: "act", note: "prose in the stream, the answer in the last-message file"},
		synthFixture{name: "codex/prose", from: "codex/schema", answer: "prose"},
		synthFixture{name: "gemini/prose", from: "gemini/stream", answer: "prose"},
		synthFixture{name: "opencode/fenced", from: "opencode/text", answer: "fenced-act"},
		synthFixture{name: "opencode/bad-decision", from: "opencode/text", answer: "act-maybe"},
		synthFixture{name: "opencode/check-after-denial", from: "opencode/write-plan", answer: "check", note: "after a denied write"},
		synthFixture{name: "gemini/crash", files: map[string]string{".stdout": "", ".stderr": "TypeError: boom\n    at main (gemini.js:1:1)\n", ".rc": "1\n"},
			note: "a crash without envelope: empty stdout, a stack trace on stderr, exit 1"},
	)
}

// answerSpec renders an answer name: a role's answers/<role>.json (compact), prose, or a
// variant of the act answer.
func answerSpec(t *testing.T, spec string) (string, string) {
	t.Helper()
	compact := func(role loop.Role) string {
		var b bytes.Buffer
		require.NoError(t, json.Compact(&b, []byte(answerText(t, role))))
		return b.String()
	}
	switch spec {
	case "prose":
		return proseAnswer, "prose: " + proseAnswer
	case "fenced-act":
		return "Here is my decision:\n```json\n" + compact(loop.RoleAct) + "\n```\n", "answers/act.json in a ```json fence after prose"
	case "act-maybe":
		return strings.Replace(compact(loop.RoleAct), `"decision":"close"`, `"decision":"maybe"`, 1), `answers/act.json with decision "maybe"`
	}
	return compact(loop.Role(spec)), "answers/" + spec + ".json"
}

// jsonQuoted is s as the inside of a JSON string.
func jsonQuoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	q := strings.TrimSpace(b.String())
	return q[1 : len(q)-1]
}

// derive replaces the mock answer in golden with answer, both raw (structured_output, the
// last-message file) and inside JSON strings (result, agent_message, content, text).
func derive(golden []byte, answer string) []byte {
	s := string(golden)
	for _, m := range mockAnswers {
		s = strings.ReplaceAll(s, jsonQuoted(m), jsonQuoted(answer))
		s = strings.ReplaceAll(s, m, answer)
	}
	return []byte(s)
}

func (f synthFixture) build(t *testing.T, dir string) (map[string][]byte, string) {
	t.Helper()
	if f.from == "" {
		files := map[string][]byte{}
		for ext, content := range f.files {
			files[ext] = []byte(content)
		}
		return files, fmt.Sprintf("%-28s (hand-written)  %s", f.name, f.note)
	}
	answer, desc := answerSpec(t, f.answer)
	files := map[string][]byte{}
	for _, ext := range []string{".stdout", ".stderr", ".rc", ".last.txt"} {
		golden, err := os.ReadFile(filepath.Join(dir, f.from+ext))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		a := answer
		if ext == ".last.txt" && f.last != "" {
			a, _ = answerSpec(t, f.last)
			_, lastDesc := answerSpec(t, f.last)
			desc += "; last-message file: " + lastDesc
		}
		files[ext] = derive(golden, a)
		if ext == ".stdout" && f.edit[0] != "" {
			require.Contains(t, string(files[ext]), f.edit[0])
			files[ext] = bytes.Replace(files[ext], []byte(f.edit[0]), []byte(f.edit[1]), 1)
		}
	}
	require.NotEmpty(t, files, "golden fixture %s", f.from)
	if f.note != "" {
		desc += " (" + f.note + ")"
	}
	return files, fmt.Sprintf("%-28s <- %-20s %s", f.name, f.from, desc)
}

const synthesizedHeader = `# Fixtures under fixtures/ that were not recorded from a real CLI.
#
# Every other fixture is a verbatim copy of the golden outputs in the shared
# agents/fixtures/<cli>/<case>.{stdout,stderr,rc,last.txt}, recorded by running the real
# CLIs against the loopback mock. Each derived fixture below is its golden source with the
# mock's answer ({"verdict": "pass", "summary": "mock final answer"}) replaced, raw and
# inside JSON strings, by the answer named (answers/<role>.json compacted). The envelope,
# usage and exit code stay as recorded.
#
# TestSynthesizedFixtures re-derives every line and fails on any difference;
#   go test ./loop -run TestSynthesizedFixtures -update-fixtures
# rewrites the files and this list.
#
`

// TestSynthesizedFixtures keeps the derived fixtures and SYNTHESIZED.txt honest.
func TestSynthesizedFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "agents", "fixtures")
	listing := synthesizedHeader
	for _, f := range synthFixtures() {
		files, line := f.build(t, dir)
		listing += line + "\n"
		for ext, want := range files {
			path := filepath.Join(dir, f.name+ext)
			if *updateFixtures {
				require.NoError(t, os.WriteFile(path, want, 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run with -update-fixtures")
			assert.Equal(t, string(want), string(got), "%s differs from its derivation", path)
		}
	}
	path := filepath.Join("testdata", "agents", "SYNTHESIZED.txt")
	if *updateFixtures {
		require.NoError(t, os.WriteFile(path, []byte(listing), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, listing, string(got))
}
