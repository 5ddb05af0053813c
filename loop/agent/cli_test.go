package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// cliArgv is the argv of CONTRACT.md §5 per CLI, for the read-only roles (plan, check) and
// the writing ones (do, act). {W} is the workspace, {S} the compact output schema, {SF} the
// schema file and {OUT} the last-message file in the step directory, {P} gemini's -p text.
// The prompt itself goes to stdin (a file) for all four.
var cliArgv = map[string][2][]string{
	"claude": {
		{"-p", "--output-format", "json", "--model", "test-model", "--tools", "Read,Grep,Glob", "--json-schema", "{S}"},
		{"-p", "--output-format", "json", "--model", "test-model", "--permission-mode", "acceptEdits", "--allowedTools", "Bash", "--json-schema", "{S}"},
	},
	"codex": {
		{"exec", "--json", "-C", "{W}", "-s", "read-only", "-m", "test-model", "--output-schema", "{SF}", "-o", "{OUT}", "--ephemeral", "-"},
		{"exec", "--json", "-C", "{W}", "-s", "workspace-write", "-m", "test-model", "--output-schema", "{SF}", "-o", "{OUT}", "--ephemeral", "-"},
	},
	"gemini": {
		{"-p", "{P}", "-o", "stream-json", "--skip-trust", "--approval-mode", "default", "-m", "test-model"},
		{"-p", "{P}", "-o", "stream-json", "--skip-trust", "--approval-mode", "yolo", "-m", "test-model"},
	},
	"opencode": {
		{"run", "--format", "json", "--dir", "{W}", "-m", "test-model"},
		{"run", "--format", "json", "--dir", "{W}", "-m", "test-model"},
	},
}

// cliHelp is the captured --help of the command git-norma runs.
var cliHelp = map[string]string{
	"claude": "claude--help.txt", "codex": "codex-exec--help.txt",
	"gemini": "gemini--help.txt", "opencode": "opencode-run--help.txt",
}

// successUsage is what the success fixtures' envelopes report (derived from the golden
// claude/schema, codex/schema, gemini/stream and opencode/text).
var successUsage = map[string]loop.Usage{
	"claude":   {InputTokens: 12, OutputTokens: 7, CostUSD: 0.000235},
	"codex":    {InputTokens: 12, OutputTokens: 7},
	"gemini":   {InputTokens: 24, OutputTokens: 14},
	"opencode": {InputTokens: 12, OutputTokens: 7},
}

func (r *cliRig) expand(t *testing.T, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.NewReplacer("{W}", r.workDir, "{S}", compactSchema(t, r.role),
			"{SF}", filepath.Join(r.stepDir, cliPromptSchemaFile), "{OUT}", filepath.Join(r.stepDir, cliLastMessageFile),
			"{P}", geminiPromptArg).Replace(a)
	}
	return out
}

// helpHas reports whether flag is listed in a --help text.
func helpHas(help, flag string) bool {
	return regexp.MustCompile(`(^|[\s,])` + regexp.QuoteMeta(flag) + `([\s,=<\[]|$)`).MatchString(help)
}

func readHelp(t *testing.T, kind string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "agents", "help", cliHelp[kind]))
	require.NoError(t, err)
	return string(data)
}

// TestCLIAgentRunsEachRole runs every CLI in every role against a success fixture: the argv
// of the contract (every flag in the CLI's --help), the workspace as cwd, the prompt on a
// closed stdin, the role's environment, and the answer decoded with the envelope's usage.
func TestCLIAgentRunsEachRole(t *testing.T) {
	t.Parallel()
	for _, kind := range CLIKinds {
		help := readHelp(t, kind)
		for _, role := range loop.Roles {
			t.Run(kind+"/"+string(role), func(t *testing.T) {
				t.Parallel()
				r := newCLIRig(t, role, 10*time.Second)
				fake := newFakeCLI(t, kind)
				a := fake.agent(t, role, CLIOptions{Model: "test-model"}, kind+"/"+string(role)+"-ok")

				out, err := a.Run(r.ctx, r.req)

				require.NoError(t, err)
				want := answerOutput(t, role)
				u := successUsage[kind]
				u.Agent, u.Model, u.Attempts = kind, "test-model", 1
				want.Usage = &u
				assert.Equal(t, want, out)

				calls := fake.calls(t)
				require.Len(t, calls, 1)
				c := calls[0]
				ro := 1
				if !role.Writes() {
					ro = 0
				}
				assert.Equal(t, r.expand(t, cliArgv[kind][ro]), c.args)
				for _, arg := range c.args {
					if strings.HasPrefix(arg, "-") && arg != "-" {
						assert.True(t, helpHas(help, arg), "%s is not in %s", arg, cliHelp[kind])
					}
				}
				wd, err := filepath.EvalSymlinks(r.workDir)
				require.NoError(t, err)
				assert.Equal(t, wd, c.cwd)
				prompt, err := os.ReadFile(filepath.Join(r.stepDir, "prompt.txt"))
				require.NoError(t, err)
				assert.Equal(t, "file", c.stdinType, "stdin is the prompt file, never an open pipe")
				assert.Equal(t, string(prompt), c.stdin)
				assertRoleEnv(t, kind, role, c.env)
				assert.Contains(t, r.log(t, "stdout.txt"), stalePrelude, "the log keeps what came before")
			})
		}
	}
}

func assertRoleEnv(t *testing.T, kind string, role loop.Role, env map[string]string) {
	t.Helper()
	want := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": os.Getenv("GEMINI_CLI_TRUST_WORKSPACE"),
		"OPENCODE_PERMISSION": os.Getenv("OPENCODE_PERMISSION"), "CLAUDE_CODE_MAX_RETRIES": os.Getenv("CLAUDE_CODE_MAX_RETRIES")}
	switch kind {
	case "gemini":
		want["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
	case "opencode":
		want["OPENCODE_PERMISSION"] = opencodeWrite
		if !role.Writes() {
			want["OPENCODE_PERMISSION"] = `{"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"}`
		}
	case "claude":
		if want["CLAUDE_CODE_MAX_RETRIES"] == "" {
			want["CLAUDE_CODE_MAX_RETRIES"] = "2"
		}
	}
	for name, v := range want {
		if v == "" {
			v = "<unset>"
		}
		assert.Equal(t, v, env[name], name)
	}
}

// TestCLIAgentExtraArgsReplaceDefaults: an extra option that takes over one of git-norma's
// permission or directory flags replaces it instead of being passed next to it.
func TestCLIAgentExtraArgsReplaceDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind  string
		role  loop.Role
		o     CLIOptions
		want  []string
		check string
	}{
		{kind: "claude", role: loop.RoleDo, o: CLIOptions{ExtraArgs: []string{"--permission-mode", "default", "--allowedTools", "Bash(go test *)", "Edit", "--max-turns", "30"}},
			want: []string{"-p", "--permission-mode", "default", "--allowedTools", "Bash(go test *)", "Edit", "--max-turns", "30", "--output-format", "json", "--json-schema", "{S}"}},
		{kind: "claude", role: loop.RoleCheck, o: CLIOptions{ExtraArgs: []string{"--tools", "Read,Grep", "--add-dir", "docs"}},
			want: []string{"-p", "--tools", "Read,Grep", "--add-dir", "docs", "--output-format", "json", "--json-schema", "{S}"}},
		{kind: "codex", role: loop.RoleDo, o: CLIOptions{ExtraArgs: []string{"-s", "read-only", "-c", "sandbox_workspace_write.network_access=true", "--cd=sub"}},
			want: []string{"exec", "-s", "read-only", "-c", "sandbox_workspace_write.network_access=true", "--cd=sub", "--json", "--output-schema", "{SF}", "-o", "{OUT}", "--ephemeral", "-"}},
		{kind: "gemini", role: loop.RoleCheck, o: CLIOptions{AllowUnsandboxed: true, ExtraArgs: []string{"--approval-mode", "yolo"}},
			want: []string{"-p", "{P}", "--approval-mode", "yolo", "-o", "stream-json", "--skip-trust"}},
		{kind: "opencode", role: loop.RoleAct, o: CLIOptions{ExtraArgs: []string{"--dir", "sub", "--variant", "high"}},
			want: []string{"run", "--dir", "sub", "--variant", "high", "--format", "json"}},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+string(tc.role), func(t *testing.T) {
			t.Parallel()
			r := newCLIRig(t, tc.role, 10*time.Second)
			require.NoError(t, os.Mkdir(filepath.Join(r.workDir, "sub"), 0o700))
			fake := newFakeCLI(t, tc.kind)
			_, err := fake.agent(t, tc.role, tc.o, tc.kind+"/"+string(tc.role)+"-ok").Run(r.ctx, r.req)
			require.NoError(t, err)
			calls := fake.calls(t)
			require.Len(t, calls, 1)
			assert.Equal(t, r.expand(t, tc.want), calls[0].args)
		})
	}
}

// TestCLIAgentModelFromEnvelope: without a configured model, Usage names the one the
// envelope reports (the main model, not gemini's router).
func TestCLIAgentModelFromEnvelope(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]string{"claude": "claude-opus-4-8[1m]", "gemini": "mock", "codex": "", "opencode": ""} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := newCLIRig(t, loop.RoleAct, 10*time.Second)
			fake := newFakeCLI(t, kind)
			out, err := fake.agent(t, loop.RoleAct, CLIOptions{}, kind+"/act-ok").Run(r.ctx, r.req)
			require.NoError(t, err)
			require.NotNil(t, out.Usage)
			assert.Equal(t, want, out.Usage.Model)
			for _, arg := range fake.calls(t)[0].args {
				assert.NotContains(t, []string{"-m", "--model"}, arg, "no model flag without a model")
			}
		})
	}
}

// TestCLIAnswersKeepTheContract: one CLI per role answers as the engine takes it — an output
// ValidateOutput accepts for the role, with its usage, and what Do discovered.
func TestCLIAnswersKeepTheContract(t *testing.T) {
	t.Parallel()
	kinds := map[loop.Role]string{loop.RolePlan: "claude", loop.RoleDo: "codex", loop.RoleCheck: "gemini", loop.RoleAct: "opencode"}
	for role, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := newCLIRig(t, role, 10*time.Second)
			out, err := newFakeCLI(t, kind).agent(t, role, CLIOptions{}, kind+"/"+string(role)+"-ok").Run(r.ctx, r.req)
			require.NoError(t, err)
			require.NoError(t, loop.ValidateOutput(role, testTaskID, &out))
			require.NotNil(t, out.Usage)
			assert.Equal(t, kind, out.Usage.Agent)
			if role == loop.RoleDo {
				assert.Equal(t, []loop.Discovery{{Title: "document the flag", Description: "the README does not mention it", Kind: "docs"}}, out.Do.Discovered)
			}
		})
	}
}
