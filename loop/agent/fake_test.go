package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// The agent CLIs are replaced by testdata/agents/fakecli.sh (its header documents the log
// format and the fixture replay), copied to <tmp>/bin/<kind>.

// fakeEnvNames are the variables the fake logs.
const fakeEnvNames = "GEMINI_CLI_TRUST_WORKSPACE OPENCODE_PERMISSION CLAUDE_CODE_MAX_RETRIES GIT_DIR IS_SANDBOX"

// fakeCLI is one fake binary and its log.
type fakeCLI struct {
	kind, bin, log string
}

func newFakeCLI(t *testing.T, kind string) *fakeCLI {
	t.Helper()
	dir := t.TempDir()
	// A link to the script, not a copy: an executable this process writes can be held open by
	// a child another parallel test is forking at that moment, and exec then fails with
	// "text file busy" (golang.org/issue/22315).
	script, err := filepath.Abs(filepath.Join("testdata", "agents", "fakecli.sh"))
	require.NoError(t, err)
	bin := filepath.Join(dir, "bin", kind)
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.Symlink(script, bin))
	return &fakeCLI{kind: kind, bin: bin, log: filepath.Join(dir, "calls.log")}
}

// options points o at the fake, replaying cases in order (the last one repeats).
func (f *fakeCLI) options(t *testing.T, o CLIOptions, cases ...string) CLIOptions {
	t.Helper()
	fixtures, err := filepath.Abs(filepath.Join("testdata", "agents", "fixtures"))
	require.NoError(t, err)
	o.Kind, o.Path = f.kind, f.bin
	o.Env = append(o.Env, "FAKECLI_LOG="+f.log, "FAKECLI_FIXTURES="+fixtures,
		"FAKECLI_CASES="+strings.Join(cases, " "), "FAKECLI_ENV="+fakeEnvNames)
	return o
}

func (f *fakeCLI) agent(t *testing.T, role loop.Role, o CLIOptions, cases ...string) loop.Agent {
	t.Helper()
	a, err := NewCLIAgent(role, f.options(t, o, cases...))
	require.NoError(t, err)
	return a
}

// fakeCall is one logged invocation.
type fakeCall struct {
	cwd        string
	stdinType  string
	stdinBytes int
	stdin      string
	args       []string
	env        map[string]string
}

func (f *fakeCLI) calls(t *testing.T) []fakeCall {
	t.Helper()
	file, err := os.Open(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer file.Close()
	var calls []fakeCall
	var c *fakeCall
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "call":
			calls = append(calls, fakeCall{env: map[string]string{}})
			c = &calls[len(calls)-1]
			stdin, err := os.ReadFile(f.log + ".stdin." + val)
			require.NoError(t, err)
			c.stdin = string(stdin)
		case "cwd":
			c.cwd = val
		case "stdin":
			typ, n, _ := strings.Cut(val, " ")
			c.stdinType = typ
			c.stdinBytes, _ = strconv.Atoi(n)
		case "arg":
			c.args = append(c.args, val)
		case "env":
			if name, v, ok := strings.Cut(val, "="); ok {
				c.env[name] = v
			} else {
				c.env[strings.TrimSuffix(val, " unset")] = "<unset>"
			}
		}
	}
	require.NoError(t, sc.Err())
	return calls
}

// cliRig is a step laid out as the engine lays it out, for one role.
type cliRig struct {
	// ctx runs the CLI as a step's, through the launcher (without Landlock).
	ctx     context.Context
	role    loop.Role
	workDir string
	stepDir string
	req     loop.Request
}

// stalePrelude is what the step's stdout log holds before the agent runs (the check step's
// log starts with the check commands' output): one failure line per envelope format, which
// must not be read as this run's answer.
const stalePrelude = "check command output\n" +
	`{"type":"turn.failed","error":{"message":"stale"}}` + "\n" +
	`{"type":"result","status":"error","error":{"type":"x","message":"stale"}}` + "\n" +
	`{"type":"error","error":{"name":"Stale","data":{"message":"stale"}}}` + "\n"

func newCLIRig(t *testing.T, role loop.Role, timeout time.Duration) *cliRig {
	t.Helper()
	root := t.TempDir()
	index := map[loop.Role]int{loop.RolePlan: 1, loop.RoleDo: 2, loop.RoleCheck: 3, loop.RoleAct: 4}[role]
	r := &cliRig{role: role, workDir: filepath.Join(root, "run", "workspace"),
		stepDir: filepath.Join(root, "run", "steps", loop.StepDirName(index, role))}
	r.ctx = contained(t, r.stepDir)
	require.NoError(t, os.MkdirAll(r.workDir, 0o700))
	// the step's files, as the engine makes them
	require.NoError(t, os.MkdirAll(filepath.Join(r.stepDir, "logs"), 0o700))
	stdout, stderr := logFile(t, r.stepDir, "stdout.txt"), logFile(t, r.stepDir, "stderr.txt")
	_, err := stdout.WriteString(stalePrelude)
	require.NoError(t, err)
	in := rigInput(t, role, index, r.stepDir, r.workDir)
	data, err := json.MarshalIndent(in, "", "  ")
	require.NoError(t, err)
	inputPath := filepath.Join(r.stepDir, "input.json")
	require.NoError(t, os.WriteFile(inputPath, data, 0o600))
	r.req = loop.Request{Input: in, InputPath: inputPath, StepDir: r.stepDir, WorkDir: r.workDir,
		Stdout: stdout, Stderr: stderr, StdoutPath: stdout.Name(), Timeout: timeout}
	return r
}

// logFile opens a step log for appending, closed when the test ends.
func logFile(t *testing.T, stepDir, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(stepDir, "logs", name), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// rigInput is the input the engine would send the role, built from the answer fixtures.
func rigInput(t *testing.T, role loop.Role, index int, stepDir, workDir string) loop.Input {
	mode := "read_only"
	if role.Writes() {
		mode = "read_write"
	}
	in := loop.Input{
		Run:  loop.RunRef{ID: "r-cli", Iteration: 1},
		Task: loop.TaskInput{ID: testTaskID, Title: "Make it work", Description: "Objective: make it work", AcceptanceCriteria: []loop.AcceptanceCriterion{}},
		Step: loop.StepRef{Index: index, Name: role, Dir: stepDir},
		Paths: loop.Paths{WorkspaceDir: workDir, WorkspaceMode: mode,
			ArtifactsDir: filepath.Join(filepath.Dir(workDir), "artifacts"), ProgressPath: filepath.Join(filepath.Dir(workDir), "artifacts", "progress.md")},
		Budgets:            loop.Budgets{MaxIterations: 3},
		StopReasonsAllowed: loop.StopReasonsAllowed,
		Context:            loop.Context{Facts: map[string]any{loop.FactFailedChecks: 0}, Links: []string{}},
	}
	if role != loop.RolePlan {
		in.Plan = answerOutput(t, loop.RolePlan).Plan
	}
	if role == loop.RoleCheck || role == loop.RoleAct {
		in.Do = answerOutput(t, loop.RoleDo).Do
	}
	if role == loop.RoleAct {
		in.Check = answerOutput(t, loop.RoleCheck).Check
	}
	return in
}

// testTaskID is the task the rig's inputs are about.
const testTaskID = "norma-t1"

// answerText is a valid answer of the role: loop's testdata/answers/<role>.json.
func answerText(t *testing.T, role loop.Role) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "answers", string(role)+".json"))
	require.NoError(t, err)
	return string(data)
}

// answerOutput is the answer as the agent returns it: decoded and validated.
func answerOutput(t *testing.T, role loop.Role) loop.Output {
	t.Helper()
	out, err := loop.DecodeOutput([]byte(answerText(t, role)))
	require.NoError(t, err)
	require.NoError(t, loop.ValidateOutput(role, testTaskID, &out))
	return out
}

func (r *cliRig) log(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.stepDir, "logs", name))
	require.NoError(t, err)
	return string(data)
}

// compactSchema is the output schema as claude gets it on its command line.
func compactSchema(t *testing.T, role loop.Role) string {
	t.Helper()
	s, err := loop.Schema(role, "output")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, s))
	return b.String()
}

// requireProtocolError asserts err is the agent's failure to keep its contract, of kind.
func requireProtocolError(t *testing.T, err error, kind string) *loop.ProtocolError {
	t.Helper()
	require.Error(t, err)
	var pe *loop.ProtocolError
	require.True(t, errors.As(err, &pe), "want *ProtocolError, got %T: %v", err, err)
	require.Equal(t, kind, pe.Kind, "error: %v", err)
	return pe
}
