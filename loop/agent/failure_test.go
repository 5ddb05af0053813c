package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// TestCLIAgentFailures: every failure fixture becomes the right *ProtocolError, with an
// actionable message, a bounded number of runs, and no panic.
func TestCLIAgentFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		kind      string
		role      loop.Role
		cases     []string
		path      string // binary override
		wantKind  string
		wantMsg   []string
		wantCalls int
		wantUsage *loop.Usage // compared when set
	}{
		{name: "claude bad key", kind: "claude", role: loop.RolePlan, cases: []string{"claude/badkey"},
			wantKind: ErrKindAuth, wantMsg: []string{"claude: Invalid API key", "(HTTP 401)", "set ANTHROPIC_API_KEY"}, wantCalls: 1},
		{name: "claude no key", kind: "claude", role: loop.RoleDo, cases: []string{"claude/nokey"},
			wantKind: ErrKindAuth, wantMsg: []string{"Not logged in", "set ANTHROPIC_API_KEY"}, wantCalls: 1},
		{name: "claude max turns", kind: "claude", role: loop.RoleDo, cases: []string{"claude/max-turns"},
			wantKind: ErrKindLimit, wantMsg: []string{"claude: reached max turns", "Reached maximum number of turns (1)", "--max-turns"}, wantCalls: 1,
			wantUsage: &loop.Usage{Agent: "claude", Model: "claude-opus-4-8[1m]", InputTokens: 12, OutputTokens: 7, CostUSD: 0.000235, Attempts: 1}},
		{name: "claude schema ignored twice", kind: "claude", role: loop.RoleCheck, cases: []string{"claude/schema-ignored"},
			wantKind: ErrKindNoAnswer, wantMsg: []string{"no structured_output", "--json-schema was ignored", "not json at all", "after one repair attempt"}, wantCalls: 2,
			wantUsage: &loop.Usage{Agent: "claude", Model: "claude-opus-4-8[1m]", InputTokens: 48, OutputTokens: 28, CostUSD: 0.00094, Attempts: 2}},
		{name: "claude bypass as root", kind: "claude", role: loop.RoleDo, cases: []string{"claude/bypass-root"},
			wantKind: ErrKindRefused, wantMsg: []string{"root/sudo", "IS_SANDBOX=1"}, wantCalls: 1},
		{name: "codex bad key", kind: "codex", role: loop.RoleDo, cases: []string{"codex/badkey"},
			wantKind: ErrKindAuth, wantMsg: []string{"unexpected status 401", "set CODEX_API_KEY", "OPENAI_API_KEY"}, wantCalls: 1},
		{name: "codex missing key variable", kind: "codex", role: loop.RolePlan, cases: []string{"codex/nokey"},
			wantKind: ErrKindAuth, wantMsg: []string{"set MOCK_KEY"}, wantCalls: 1},
		{name: "codex outside a git repository", kind: "codex", role: loop.RolePlan, cases: []string{"codex/nogit"},
			wantKind: ErrKindRefused, wantMsg: []string{"Not inside a trusted directory", "--skip-git-repo-check"}, wantCalls: 1},
		{name: "codex prose instead of JSON", kind: "codex", role: loop.RoleDo, cases: []string{"codex/prose"},
			wantKind: loop.ErrKindInvalidJSON, wantMsg: []string{"not one JSON object", "I made the change", "after one repair attempt"}, wantCalls: 2,
			wantUsage: &loop.Usage{Agent: "codex", InputTokens: 24, OutputTokens: 14, Attempts: 2}},
		{name: "codex JSON of another shape", kind: "codex", role: loop.RoleDo, cases: []string{"codex/text"},
			wantKind: loop.ErrKindInvalidJSON, wantMsg: []string{"does not fit the output format", "Output.summary"}, wantCalls: 2},
		{name: "gemini untrusted workspace", kind: "gemini", role: loop.RoleCheck, cases: []string{"gemini/untrusted"},
			wantKind: ErrKindRefused, wantMsg: []string{"gemini: workspace not trusted (exit 55)", "--skip-trust"}, wantCalls: 1},
		{name: "gemini bad key (stream)", kind: "gemini", role: loop.RoleDo, cases: []string{"gemini/badkey-stream"},
			wantKind: ErrKindAuth, wantMsg: []string{"gemini: invalid x-api-key (HTTP 401, exit 145)", "set GEMINI_API_KEY"}, wantCalls: 1},
		{name: "gemini bad key (json error on stderr)", kind: "gemini", role: loop.RoleDo, cases: []string{"gemini/badkey"},
			wantKind: ErrKindAuth, wantMsg: []string{"gemini: invalid x-api-key (HTTP 401, exit 145)"}, wantCalls: 1},
		{name: "gemini prose instead of JSON", kind: "gemini", role: loop.RolePlan, cases: []string{"gemini/prose"},
			wantKind: loop.ErrKindInvalidJSON, wantMsg: []string{"not one JSON object", "after one repair attempt"}, wantCalls: 2},
		{name: "gemini crashes", kind: "gemini", role: loop.RoleAct, cases: []string{"gemini/crash"},
			wantKind: loop.ErrKindExit, wantMsg: []string{"gemini: exited with status 1: TypeError: boom"}, wantCalls: 1},
		{name: "opencode bad key", kind: "opencode", role: loop.RolePlan, cases: []string{"opencode/badkey"},
			wantKind: ErrKindAuth, wantMsg: []string{"opencode: invalid x-api-key (HTTP 401)", "ANTHROPIC_API_KEY"}, wantCalls: 1},
		{name: "opencode rejected permission, no answer", kind: "opencode", role: loop.RoleDo, cases: []string{"opencode/write-outside"},
			wantKind: ErrKindNoAnswer, wantMsg: []string{"without a final answer", "permission requested: external_directory", "after one repair attempt"}, wantCalls: 2},
		{name: "opencode decision out of contract", kind: "opencode", role: loop.RoleAct, cases: []string{"opencode/bad-decision"},
			wantKind: loop.ErrKindContract, wantMsg: []string{"act.decision must be close, replan, rollback or continue", "after one repair attempt"}, wantCalls: 2},
		{name: "binary missing", kind: "codex", role: loop.RoleDo, cases: []string{"codex/do-ok"}, path: "/nonexistent/codex",
			wantKind: loop.ErrKindStart, wantMsg: []string{"codex: cannot start", "npm install -g @openai/codex"}, wantCalls: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newCLIRig(t, tc.role, 10*time.Second)
			fake := newFakeCLI(t, tc.kind)
			o := fake.options(t, CLIOptions{}, tc.cases...)
			if tc.path != "" {
				o.Path = tc.path
			}
			a, err := NewCLIAgent(tc.role, o)
			require.NoError(t, err)

			var out loop.Output
			require.NotPanics(t, func() { out, err = a.Run(r.ctx, r.req) })

			pe := requireProtocolError(t, err, tc.wantKind)
			for _, m := range tc.wantMsg {
				assert.Contains(t, pe.Msg, m)
			}
			assert.Len(t, fake.calls(t), tc.wantCalls)
			if tc.wantCalls == 2 {
				require.NotNil(t, out.Usage)
				assert.Equal(t, 2, out.Usage.Attempts)
				assert.Contains(t, r.log(t, "stderr.txt"), "git-norma: the "+tc.kind+" answer was rejected")
				repair := fake.calls(t)[1].stdin
				assert.Contains(t, repair, "Your previous answer for this step was rejected")
				assert.Contains(t, repair, strings.TrimSuffix(pe.Msg, " (after one repair attempt)"))
			}
			if tc.wantUsage != nil {
				require.NotNil(t, out.Usage)
				assert.InDelta(t, tc.wantUsage.CostUSD, out.Usage.CostUSD, 1e-9)
				got := *out.Usage
				got.CostUSD = tc.wantUsage.CostUSD
				assert.Equal(t, *tc.wantUsage, got)
			}
		})
	}
}

// TestCLIAgentRepairSucceeds: an answer without structured_output gets one repair run whose
// valid answer is taken, with Attempts 2 and the usage of both runs.
func TestCLIAgentRepairSucceeds(t *testing.T) {
	t.Parallel()
	r := newCLIRig(t, loop.RolePlan, 10*time.Second)
	fake := newFakeCLI(t, "claude")
	a := fake.agent(t, loop.RolePlan, CLIOptions{}, "claude/schema-ignored", "claude/plan-ok")

	out, err := a.Run(r.ctx, r.req)

	require.NoError(t, err)
	require.NotNil(t, out.Plan)
	assert.Equal(t, testTaskID, out.Plan.TaskID)
	require.NotNil(t, out.Usage)
	assert.Equal(t, 2, out.Usage.Attempts)
	assert.Equal(t, int64(36), out.Usage.InputTokens)
	assert.Equal(t, int64(21), out.Usage.OutputTokens)
	assert.InDelta(t, 0.000705, out.Usage.CostUSD, 1e-9)
	calls := fake.calls(t)
	require.Len(t, calls, 2)
	assert.Equal(t, calls[0].args, calls[1].args, "the repair is a fresh run with the same flags")
	assert.Contains(t, calls[1].stdin, "not json at all", "the repair prompt quotes the rejected answer")
	assert.Contains(t, calls[1].stdin, "Do not redo the work")
	repairPrompt, err := os.ReadFile(filepath.Join(r.stepDir, "prompt-repair.txt"))
	require.NoError(t, err)
	assert.Equal(t, string(repairPrompt), calls[1].stdin)
	assert.Contains(t, r.log(t, "stderr.txt"), "asking once more for the JSON answer only")
}

// TestCLIAgentAnswerForms: where each CLI's answer is found.
func TestCLIAgentAnswerForms(t *testing.T) {
	t.Parallel()
	t.Run("codex: a stale last-message file is removed and the stream answers", func(t *testing.T) {
		t.Parallel()
		r := newCLIRig(t, loop.RoleAct, 10*time.Second)
		last := filepath.Join(r.stepDir, cliLastMessageFile)
		require.NoError(t, os.WriteFile(last, []byte(`{"status":"error","summary":{"text":"stale"}}`), 0o600))
		fake := newFakeCLI(t, "codex")
		out, err := fake.agent(t, loop.RoleAct, CLIOptions{}, "codex/act-stream-only").Run(r.ctx, r.req)
		require.NoError(t, err)
		assert.Equal(t, loop.StatusOK, out.Status)
		assert.Equal(t, loop.DecisionClose, out.Act.Decision)
		assert.NoFileExists(t, last)
	})
	t.Run("codex: the last-message file wins over the stream", func(t *testing.T) {
		t.Parallel()
		r := newCLIRig(t, loop.RoleAct, 10*time.Second)
		fake := newFakeCLI(t, "codex")
		out, err := fake.agent(t, loop.RoleAct, CLIOptions{}, "codex/act-last-file").Run(r.ctx, r.req)
		require.NoError(t, err)
		assert.Equal(t, loop.DecisionClose, out.Act.Decision)
		assert.FileExists(t, filepath.Join(r.stepDir, cliLastMessageFile))
		schema, err := os.ReadFile(filepath.Join(r.stepDir, cliPromptSchemaFile))
		require.NoError(t, err)
		want, err := loop.Schema(loop.RoleAct, "output")
		require.NoError(t, err)
		assert.Equal(t, string(want), string(schema), "--output-schema gets the role's schema")
	})
	t.Run("opencode: a fenced answer after prose", func(t *testing.T) {
		t.Parallel()
		r := newCLIRig(t, loop.RoleAct, 10*time.Second)
		fake := newFakeCLI(t, "opencode")
		out, err := fake.agent(t, loop.RoleAct, CLIOptions{}, "opencode/fenced").Run(r.ctx, r.req)
		require.NoError(t, err)
		assert.Equal(t, loop.DecisionClose, out.Act.Decision)
	})
	t.Run("opencode: the text after a denied tool call", func(t *testing.T) {
		t.Parallel()
		r := newCLIRig(t, loop.RoleCheck, 10*time.Second)
		fake := newFakeCLI(t, "opencode")
		out, err := fake.agent(t, loop.RoleCheck, CLIOptions{}, "opencode/check-after-denial").Run(r.ctx, r.req)
		require.NoError(t, err)
		assert.Equal(t, loop.VerdictPass, out.Check.Verdict.Status)
		assert.Equal(t, int64(24), out.Usage.InputTokens, "both steps' tokens")
	})
	t.Run("claude: permission denials become warnings", func(t *testing.T) {
		t.Parallel()
		r := newCLIRig(t, loop.RoleDo, 10*time.Second)
		fake := newFakeCLI(t, "claude")
		out, err := fake.agent(t, loop.RoleDo, CLIOptions{}, "claude/do-denied").Run(r.ctx, r.req)
		require.NoError(t, err)
		assert.Equal(t, []string{"claude denied 1 tool call(s): Bash"}, out.Summary.Warnings)
	})
}

// TestCLIAgentTimeoutKillsTheGroup: a hung CLI and its child are both dead when Run returns
// at the timeout, whether or not they ignore SIGTERM (gemini's re-spawned child does).
func TestCLIAgentTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"hang", "hang-ignore-term"} {
		t.Run(c, func(t *testing.T) {
			t.Parallel()
			// Long enough for the fake and its child to start and write their pids on a busy
			// machine: the test is about what happens at the timeout, not before it.
			r := newCLIRig(t, loop.RoleDo, 1500*time.Millisecond)
			fake := newFakeCLI(t, "gemini")
			a := fake.agent(t, loop.RoleDo, CLIOptions{}, c)
			start := time.Now()
			out, err := a.Run(r.ctx, r.req)
			requireProtocolError(t, err, loop.ErrKindTimeout)
			assert.Less(t, time.Since(start), 5*time.Second, "the timeout, loop's 2 s grace before SIGKILL, and slack")
			assert.Len(t, fake.calls(t), 1, "a timeout is not repaired")
			assert.Equal(t, 1, out.Usage.Attempts)
			data, err := os.ReadFile(fake.log + ".pids")
			require.NoError(t, err)
			var pid, child int
			_, err = fmt.Sscan(string(data), &pid, &child)
			require.NoError(t, err)
			assertDead(t, pid)
			assertDead(t, child)
		})
	}
}

// TestCLIAgentCancel: cancelling the context stops the CLI and returns the context's error
// (an interruption, not an agent fault).
func TestCLIAgentCancel(t *testing.T) {
	t.Parallel()
	r := newCLIRig(t, loop.RolePlan, 0)
	fake := newFakeCLI(t, "codex")
	a := fake.agent(t, loop.RolePlan, CLIOptions{}, "hang")
	ctx, cancel := context.WithTimeout(r.ctx, 300*time.Millisecond)
	defer cancel()
	_, err := a.Run(ctx, r.req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, loop.IsProtocolError(err))
}

// assertDead waits briefly for pid to be gone or a zombie (state Z in /proc/<pid>/stat).
func assertDead(t *testing.T, pid int) {
	t.Helper()
	require.Positive(t, pid)
	dead := func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		return len(fields) > 0 && fields[0] == "Z"
	}
	assert.Eventually(t, dead, 2*time.Second, 20*time.Millisecond, "process %d is still alive", pid)
}

// TestCLIAgentStripsGitVariables: git's repository variables from a hook never reach the CLI.
func TestCLIAgentStartsFromTheGivenEnv(t *testing.T) {
	t.Setenv("GIT_DIR", "/somewhere/else/.git")
	r := newCLIRig(t, loop.RoleDo, 10*time.Second)
	r.req.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_DIR=") })
	fake := newFakeCLI(t, "opencode")
	_, err := fake.agent(t, loop.RoleDo, CLIOptions{Env: []string{"IS_SANDBOX=1"}}, "opencode/do-ok").Run(r.ctx, r.req)
	require.NoError(t, err)
	env := fake.calls(t)[0].env
	assert.Equal(t, "<unset>", env["GIT_DIR"])
	assert.Equal(t, "1", env["IS_SANDBOX"], "the configured env is passed")
}

// TestCLIAgentDirSymlinkOut: a relative directory option that a symlink in the workspace
// turns into one outside it is refused at run time, as the workspace's violation (an earlier
// step's agent can make that link): not as a CLI that cannot start here, which fails the run
// as its environment (exit 128) and stops every loop at it.
func TestCLIAgentDirSymlinkOut(t *testing.T) {
	t.Parallel()
	r := newCLIRig(t, loop.RoleDo, 10*time.Second)
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(r.workDir, "out")))
	fake := newFakeCLI(t, "claude")
	a := fake.agent(t, loop.RoleDo, CLIOptions{ExtraArgs: []string{"--add-dir", "out"}}, "claude/do-ok")
	_, err := a.Run(r.ctx, r.req)
	pe := requireProtocolError(t, err, loop.ErrKindWorkspace)
	assert.Contains(t, pe.Msg, "outside the workspace")
	assert.Empty(t, fake.calls(t))
}

// TestCLIAgentOversizedLine: a stdout line over MaxOutputBytes is never held in memory; when
// the answer could be on it, the run fails with output_too_large (not repaired).
func TestCLIAgentOversizedLine(t *testing.T) {
	t.Parallel()
	fixtures := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(fixtures, "big"), 0o700))
	huge := `{"type":"result","subtype":"success","is_error":false,"result":"` + strings.Repeat("x", loop.MaxOutputBytes) + `"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(fixtures, "big", "claude.stdout"), []byte(huge), 0o600))
	r := newCLIRig(t, loop.RoleDo, 10*time.Second)
	fake := newFakeCLI(t, "claude")
	o := fake.options(t, CLIOptions{}, "big/claude")
	o.Env = append(o.Env, "FAKECLI_FIXTURES="+fixtures)
	a, err := NewCLIAgent(loop.RoleDo, o)
	require.NoError(t, err)
	_, err = a.Run(r.ctx, r.req)
	requireProtocolError(t, err, loop.ErrKindTooLarge)
	assert.Len(t, fake.calls(t), 1)
}
