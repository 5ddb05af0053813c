package loop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
	script, err := os.ReadFile(filepath.Join("testdata", "agents", "fakecli.sh"))
	require.NoError(t, err)
	bin := filepath.Join(dir, "bin", kind)
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, script, 0o755))
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

func (f *fakeCLI) agent(t *testing.T, role Role, o CLIOptions, cases ...string) Agent {
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
	role    Role
	workDir string
	stepDir string
	req     Request
}

// stalePrelude is what the step's stdout log holds before the agent runs (the check step's
// log starts with the check commands' output): one failure line per envelope format, which
// must not be read as this run's answer.
const stalePrelude = "check command output\n" +
	`{"type":"turn.failed","error":{"message":"stale"}}` + "\n" +
	`{"type":"result","status":"error","error":{"type":"x","message":"stale"}}` + "\n" +
	`{"type":"error","error":{"name":"Stale","data":{"message":"stale"}}}` + "\n"

func newCLIRig(t *testing.T, role Role, timeout time.Duration) *cliRig {
	t.Helper()
	root := t.TempDir()
	index := map[Role]int{RolePlan: 1, RoleDo: 2, RoleCheck: 3, RoleAct: 4}[role]
	r := &cliRig{role: role, workDir: filepath.Join(root, "run", "workspace"),
		stepDir: filepath.Join(root, "run", "steps", StepDirName(index, role))}
	require.NoError(t, os.MkdirAll(r.workDir, 0o700))
	s := &stepRun{dir: r.stepDir}
	require.NoError(t, s.open())
	t.Cleanup(func() { s.stdout.Close(); s.stderr.Close() })
	_, err := s.stdout.WriteString(stalePrelude)
	require.NoError(t, err)
	in := rigInput(t, role, index, r.stepDir, r.workDir)
	inputPath := filepath.Join(r.stepDir, "input.json")
	require.NoError(t, writeJSON(inputPath, in))
	r.req = Request{Input: in, InputPath: inputPath, StepDir: r.stepDir, WorkDir: r.workDir,
		Stdout: s.stdout, Stderr: s.stderr, StdoutPath: s.stdout.Name(), Timeout: timeout}
	return r
}

// rigInput is the input the engine would send the role, built from the answer fixtures.
func rigInput(t *testing.T, role Role, index int, stepDir, workDir string) Input {
	mode := "read_only"
	if !readOnlyRole(role) {
		mode = "read_write"
	}
	in := Input{
		Run:  RunRef{ID: "r-cli", Iteration: 1},
		Task: TaskInput{ID: testTaskID, Title: "Make it work", Description: "Objective: make it work", AcceptanceCriteria: []AcceptanceCriterion{}},
		Step: StepRef{Index: index, Name: role, Dir: stepDir},
		Paths: Paths{WorkspaceDir: workDir, WorkspaceMode: mode,
			ArtifactsDir: filepath.Join(filepath.Dir(workDir), "artifacts"), ProgressPath: filepath.Join(filepath.Dir(workDir), "artifacts", "progress.md")},
		Budgets:            Budgets{MaxIterations: 3},
		StopReasonsAllowed: StopReasonsAllowed,
		Context:            Context{Facts: map[string]any{FactFailedChecks: 0}, Links: []string{}},
	}
	if role != RolePlan {
		in.Plan = answerOutput(t, RolePlan).Plan
	}
	if role == RoleCheck || role == RoleAct {
		in.Do = answerOutput(t, RoleDo).Do
	}
	if role == RoleAct {
		in.Check = answerOutput(t, RoleCheck).Check
	}
	return in
}

// answerText is testdata/agents/answers/<role>.json.
func answerText(t *testing.T, role Role) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "agents", "answers", string(role)+".json"))
	require.NoError(t, err)
	return string(data)
}

// answerOutput is the answer as the agent returns it: decoded and validated.
func answerOutput(t *testing.T, role Role) Output {
	t.Helper()
	out, err := DecodeOutput([]byte(answerText(t, role)))
	require.NoError(t, err)
	require.NoError(t, ValidateOutput(role, testTaskID, &out))
	return out
}

func (r *cliRig) log(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.stepDir, "logs", name))
	require.NoError(t, err)
	return string(data)
}

// compactSchema is the output schema as claude gets it on its command line.
func compactSchema(t *testing.T, role Role) string {
	t.Helper()
	s, err := Schema(role, "output")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, s))
	return b.String()
}
