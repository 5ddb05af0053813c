package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lines are the CLIs' recorded event formats (shared/agents/fixtures), shortened.
func TestActivityOfAgentEvents(t *testing.T) {
	cases := map[string]string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/home/user/repo/login/handler.go","old_string":"a"}}]}}`: "Edit handler.go",
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./login/..."}}]}}`:                                           "Bash go test ./login/...",
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Now the tests pass."}]}}`:                                                                          "Now the tests pass.",
		`{"type":"item.started","item":{"id":"item_0","type":"file_change","changes":[{"path":"/home/user/repo/out.txt","kind":"add"}],"status":"in_progress"}}`:             "edit out.txt",
		`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'make test'","status":"in_progress"}}`:                                  "$ bash -lc 'make test'",
		`{"type":"tool_use","timestamp":"2026-11-22T06:36:20Z","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"out.txt","content":"x"}}`:                  "write_file out.txt",
		`{"type":"message","role":"assistant","content":"Done: the file is written.","delta":true}`:                                                                          "Done: the file is written.",
		`{"type":"tool_use","part":{"type":"tool","tool":"write","state":{"status":"completed","input":{"filePath":"/home/user/repo/out.txt","content":"x"}}}}`:              "write out.txt",
		`{"type":"result","subtype":"success","result":"{\"verdict\": \"pass\"}","total_cost_usd":0.00047}`:                                                                  "",
		`{"type":"message","role":"user","content":"hi"}`: "",
		"go: downloading golang.org/x/sys v0.49.0":        "go: downloading golang.org/x/sys v0.49.0",
		"   ": "",
	}
	for line, want := range cases {
		assert.Equal(t, want, activityOf(line), line)
	}
}

func TestActivityReadsTheNewestTellingLine(t *testing.T) {
	dir := t.TempDir()
	assert.Empty(t, Activity(dir), "nothing written yet")
	stdout := `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read","input":{"file_path":"/r/a.go"}}]}}` + "\n" +
		`{"type":"result","result":"x"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stdout.txt"), []byte(stdout), 0o600))
	assert.Equal(t, "Read a.go", Activity(dir), "a line that says nothing is skipped")
}
