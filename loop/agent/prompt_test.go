package agent

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

func TestPromptPerRole(t *testing.T) {
	common := []string{
		"You are the %s agent of git-norma",
		"Never run git commands that change anything",
		"Never touch the issue tracker",
		"Answer with exactly one JSON object that matches the JSON Schema below",
		"budget_exceeded, dependency_blocked, verify_missing, replan_required",
	}
	specific := map[loop.Role][]string{
		loop.RolePlan: {"The plan role is READ-ONLY", "# Your role: PLAN", "executable checks", "DECOMPOSE", "BLOCKED",
			"plan.children", "plan.prerequisite", `plan.task_id is "norma-t1"`, "verify_missing"},
		loop.RoleDo: {"ONLY inside the workspace", "# Your role: DO", "Execute only the planned do_steps",
			"ids of the steps you executed", "exit_code", "do.discovered"},
		loop.RoleCheck: {"The check role is READ-ONLY", "# Your role: CHECK", "input.evidence", "acceptance_results",
			"any acceptance result FAIL → FAIL", "PARTIAL", "A failed command stays failed"},
		loop.RoleAct: {"ONLY inside the workspace", "# Your role: ACT", "close", "continue", "replan", "rollback", "input.check.verdict"},
	}
	for _, role := range loop.Roles {
		t.Run(string(role), func(t *testing.T) {
			r := newCLIRig(t, role, time.Second)
			a, err := NewCLIAgent(role, CLIOptions{Kind: "gemini"})
			require.NoError(t, err)
			d, err := a.(*cliAgent).promptData(r.req)
			require.NoError(t, err)
			p, err := render("prompt", d)
			require.NoError(t, err)
			for _, want := range common {
				if strings.Contains(want, "%s") {
					want = strings.Replace(want, "%s", string(role), 1)
				}
				assert.Contains(t, p, want)
			}
			for _, want := range specific[role] {
				assert.Contains(t, p, want)
			}
			for _, other := range loop.Roles {
				if other != role {
					assert.NotContains(t, p, "# Your role: "+strings.ToUpper(string(other)))
				}
			}
			input, err := readFileString(r.req.InputPath)
			require.NoError(t, err)
			assert.Contains(t, p, strings.TrimSpace(input), "the step's input.json")
			schema, err := loop.Schema(role, "output")
			require.NoError(t, err)
			assert.Contains(t, p, strings.TrimSpace(string(schema)), "the output schema")
			assert.Contains(t, p, r.workDir)
		})
	}
}

func TestPromptHintsPerCLI(t *testing.T) {
	for kind, want := range map[string]string{"claude": "StructuredOutput tool", "codex": "checked against the schema", "gemini": "nothing else", "opencode": "nothing else"} {
		r := newCLIRig(t, loop.RoleDo, time.Second)
		a, err := NewCLIAgent(loop.RoleDo, CLIOptions{Kind: kind})
		require.NoError(t, err)
		d, err := a.(*cliAgent).promptData(r.req)
		require.NoError(t, err)
		p, err := render("prompt", d)
		require.NoError(t, err)
		assert.Contains(t, p, want, kind)
	}
}

func TestPromptLastFailure(t *testing.T) {
	r := newCLIRig(t, loop.RoleDo, time.Second)
	r.req.Input.Context.Facts[loop.FactLastFailure] = loop.Failure{Iteration: 1, Verdict: loop.VerdictFail}
	a, err := NewCLIAgent(loop.RoleDo, CLIOptions{Kind: "codex"})
	require.NoError(t, err)
	d, err := a.(*cliAgent).promptData(r.req)
	require.NoError(t, err)
	p, err := render("prompt", d)
	require.NoError(t, err)
	assert.Contains(t, p, "context.facts.last_failure")
}

func TestRepairPrompt(t *testing.T) {
	r := newCLIRig(t, loop.RoleCheck, time.Second)
	a, err := NewCLIAgent(loop.RoleCheck, CLIOptions{Kind: "opencode"})
	require.NoError(t, err)
	d, err := a.(*cliAgent).promptData(r.req)
	require.NoError(t, err)
	previous := "Sure! " + strings.Repeat("x", 10000)
	p, err := renderRepair(d, errors.New("invalid_json: opencode: the final message is not one JSON object"), previous)
	require.NoError(t, err)
	assert.Contains(t, p, "Your previous answer for this step was rejected")
	assert.Contains(t, p, "the final message is not one JSON object")
	assert.Contains(t, p, "Sure! xxx")
	assert.Contains(t, p, "[...]")
	assert.Less(t, strings.Count(p, "x"), 5000, "the rejected answer is quoted bounded")
	assert.Contains(t, p, "Do not redo the work")
	assert.Contains(t, p, "# Your role: CHECK")
	assert.Contains(t, p, "JSON Schema of the answer")
}

func TestExtractJSON(t *testing.T) {
	obj := `{"status":"ok","summary":{"text":"x"}}`
	tests := []struct {
		name, text, want, wantKind string
	}{
		{name: "plain", text: "\n " + obj + " \n", want: obj},
		{name: "fenced", text: "```json\n" + obj + "\n```", want: obj},
		{name: "fence after prose", text: "Here it is:\n```\n" + obj + "\n```\nDone.", want: obj},
		{name: "object inside prose", text: "The answer: " + obj + " — that's all.", want: obj},
		{name: "empty", text: "  \n", wantKind: ErrKindNoAnswer},
		{name: "prose", text: "I did it.", wantKind: loop.ErrKindInvalidJSON},
		{name: "two objects", text: obj + "\n" + obj, wantKind: loop.ErrKindInvalidJSON},
		{name: "truncated", text: `{"status":"ok",`, wantKind: loop.ErrKindInvalidJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extractJSON("gemini", tc.text)
			if tc.wantKind != "" {
				pe := requireProtocolError(t, err, tc.wantKind)
				assert.True(t, strings.HasPrefix(pe.Msg, "gemini: "))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func readFileString(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}
