package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// TestNewCLIAgentRefuses: NewCLIAgent refuses, with a message that says what to do, every
// option that grants a role more than the spec allows, and accepts the ones that do not.
func TestNewCLIAgentRefuses(t *testing.T) {
	tests := []struct {
		name    string
		role    loop.Role
		o       CLIOptions
		euid    int
		wantErr []string // nil: accepted
	}{
		{name: "unknown kind", role: loop.RoleDo, o: CLIOptions{Kind: "cursor"}, wantErr: []string{`unknown agent CLI "cursor"`, "claude, codex, gemini, opencode"}},
		{name: "unknown role", role: "review", o: CLIOptions{Kind: "claude"}, wantErr: []string{`unknown role "review"`}},
		{name: "plain claude do", role: loop.RoleDo, o: CLIOptions{Kind: "claude", Model: "sonnet"}},

		// claude
		{name: "claude skip permissions", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--dangerously-skip-permissions"}},
			wantErr: []string{"drops claude's own permission checks", "allow_unsandboxed", "root", "IS_SANDBOX=1"}},
		{name: "claude bypassPermissions", role: loop.RoleAct, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--permission-mode", "bypassPermissions"}},
			wantErr: []string{"--permission-mode bypassPermissions drops claude's own permission checks", "IS_SANDBOX=1"}},
		{name: "claude bypass in settings", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{`--settings={"permissions":{"defaultMode":"bypassPermissions"}}`}},
			wantErr: []string{"drops claude's own permission checks"}},
		{name: "claude allow-dangerously", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--allow-dangerously-skip-permissions"}},
			wantErr: []string{"drops claude's own permission checks"}},
		{name: "claude bypass allowed, root without IS_SANDBOX", role: loop.RoleDo, euid: 0,
			o:       CLIOptions{Kind: "claude", AllowUnsandboxed: true, ExtraArgs: []string{"--dangerously-skip-permissions"}},
			wantErr: []string{"cannot run as root", "cannot be used with root/sudo privileges", `add "IS_SANDBOX=1" to the do agent's env`}},
		{name: "claude bypass allowed, root with IS_SANDBOX", role: loop.RoleDo, euid: 0,
			o: CLIOptions{Kind: "claude", AllowUnsandboxed: true, Env: []string{"IS_SANDBOX=1"}, ExtraArgs: []string{"--dangerously-skip-permissions"}}},
		{name: "claude bypass allowed, not root", role: loop.RoleDo, euid: 1000,
			o: CLIOptions{Kind: "claude", AllowUnsandboxed: true, ExtraArgs: []string{"--permission-mode=bypassPermissions"}}},
		{name: "claude acceptEdits for plan", role: loop.RolePlan, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--permission-mode", "acceptEdits"}},
			wantErr: []string{"lets the plan agent write", "read-only"}},
		{name: "claude Bash for check", role: loop.RoleCheck, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--allowedTools", "Bash(go test *)"}},
			wantErr: []string{"lets the check agent write", "Bash(go test *)"}},
		{name: "claude write tools for plan", role: loop.RolePlan, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--tools", "Read,Edit"}},
			wantErr: []string{"tool Edit can change files"}},
		{name: "claude Bash for check when allowed", role: loop.RoleCheck, o: CLIOptions{Kind: "claude", AllowUnsandboxed: true, ExtraArgs: []string{"--allowed-tools", "Bash"}}},
		{name: "claude read tools for plan", role: loop.RolePlan, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--tools", "Read,Grep", "Glob", "--permission-mode", "plan"}}},
		{name: "claude mcp for check", role: loop.RoleCheck, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--mcp-config", "mcp.json"}},
			wantErr: []string{"adds tools git-norma cannot vet"}},
		{name: "claude add-dir absolute", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--add-dir", "/etc"}},
			wantErr: []string{`--add-dir "/etc" points outside the workspace`}},
		{name: "claude add-dir up", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--add-dir", "docs", "../other"}},
			wantErr: []string{`"../other" points outside the workspace`}},
		{name: "claude add-dir home", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--add-dir", "~/x"}},
			wantErr: []string{"points outside the workspace"}},
		{name: "claude add-dir inside", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--add-dir", "docs", "src/pkg"}}},
		{name: "claude model flag", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--model", "opus"}},
			wantErr: []string{"--model opus cannot be used in extra_args", "model option"}},
		{name: "claude output format", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--output-format", "text"}},
			wantErr: []string{"cannot be used in extra_args", "json"}},
		{name: "claude resume", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"-r"}},
			wantErr: []string{"fresh session"}},
		{name: "claude positional", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"do", "it"}},
			wantErr: []string{`"do" is not an option`, "prompt"}},
		{name: "claude unknown option", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--yolo"}},
			wantErr: []string{`unknown option "--yolo"`, "claude --help"}},
		{name: "claude option without value", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--effort"}},
			wantErr: []string{"--effort needs a value"}},
		{name: "claude hidden max-turns", role: loop.RoleDo, o: CLIOptions{Kind: "claude", ExtraArgs: []string{"--max-turns", "40", "--effort=high", "--bare"}}},

		// codex
		{name: "codex workspace-write for plan", role: loop.RolePlan, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-s", "workspace-write"}},
			wantErr: []string{"-s workspace-write lets the plan agent write"}},
		{name: "codex workspace-write for check when allowed", role: loop.RoleCheck, o: CLIOptions{Kind: "codex", AllowUnsandboxed: true, ExtraArgs: []string{"--sandbox=workspace-write"}}},
		{name: "codex full access", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-s", "danger-full-access"}},
			wantErr: []string{"drops codex's own permission checks", "allow_unsandboxed"}},
		{name: "codex bypass", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"--dangerously-bypass-approvals-and-sandbox"}},
			wantErr: []string{"--dangerously-bypass-approvals-and-sandbox drops codex's own permission checks"}},
		{name: "codex bypass allowed", role: loop.RoleDo, o: CLIOptions{Kind: "codex", AllowUnsandboxed: true, ExtraArgs: []string{"--dangerously-bypass-approvals-and-sandbox"}}},
		{name: "codex sandbox via config", role: loop.RoleAct, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-c", `sandbox_mode="danger-full-access"`}},
			wantErr: []string{"drops codex's own permission checks"}},
		{name: "codex cd elsewhere", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-C", "/tmp"}},
			wantErr: []string{`--cd "/tmp" points outside the workspace`}},
		{name: "codex cd attached", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-C/srv/repo"}},
			wantErr: []string{`"/srv/repo" points outside the workspace`}},
		{name: "codex add-dir elsewhere", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"--add-dir", "/home/me"}},
			wantErr: []string{"points outside the workspace"}},
		{name: "codex add-dir for plan", role: loop.RolePlan, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"--add-dir", "out"}},
			wantErr: []string{"lets the plan agent write"}},
		{name: "codex writable roots", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-c", `sandbox_workspace_write.writable_roots=["/"]`}},
			wantErr: []string{"outside the workspace"}},
		{name: "codex network for do", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"-c", "sandbox_workspace_write.network_access=true", "--skip-git-repo-check"}}},
		{name: "codex output schema", role: loop.RoleDo, o: CLIOptions{Kind: "codex", ExtraArgs: []string{"--output-schema", "s.json"}},
			wantErr: []string{"cannot be used in extra_args"}},

		// gemini
		{name: "gemini yolo for check", role: loop.RoleCheck, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"--approval-mode", "yolo"}},
			wantErr: []string{"drops gemini's own permission checks", "allow_unsandboxed is set for the check agent"}},
		{name: "gemini -y for plan", role: loop.RolePlan, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"-y"}},
			wantErr: []string{"drops gemini's own permission checks"}},
		{name: "gemini yolo for check when allowed", role: loop.RoleCheck, o: CLIOptions{Kind: "gemini", AllowUnsandboxed: true, ExtraArgs: []string{"--yolo"}}},
		{name: "gemini yolo for do", role: loop.RoleDo, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"--approval-mode=yolo"}}},
		{name: "gemini auto_edit for plan", role: loop.RolePlan, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"--approval-mode", "auto_edit"}},
			wantErr: []string{"lets the plan agent write"}},
		{name: "gemini include elsewhere", role: loop.RoleDo, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"--include-directories", "docs,/etc"}},
			wantErr: []string{`"/etc" points outside the workspace`}},
		{name: "gemini worktree", role: loop.RoleDo, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"-w"}},
			wantErr: []string{"the run's workspace is the worktree"}},
		{name: "gemini output json", role: loop.RoleDo, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"-o", "json"}},
			wantErr: []string{"stream-json"}},
		{name: "gemini sandbox", role: loop.RoleCheck, o: CLIOptions{Kind: "gemini", ExtraArgs: []string{"-s", "--approval-mode", "plan"}}},

		// opencode
		{name: "opencode auto", role: loop.RoleDo, o: CLIOptions{Kind: "opencode", ExtraArgs: []string{"--auto"}},
			wantErr: []string{"--auto drops opencode's own permission checks"}},
		{name: "opencode plan agent for plan", role: loop.RolePlan, o: CLIOptions{Kind: "opencode", ExtraArgs: []string{"--agent", "plan"}},
			wantErr: []string{"override git-norma's OPENCODE_PERMISSION"}},
		{name: "opencode build agent", role: loop.RoleDo, o: CLIOptions{Kind: "opencode", ExtraArgs: []string{"--agent", "build", "--variant", "high"}}},
		{name: "opencode dir elsewhere", role: loop.RoleDo, o: CLIOptions{Kind: "opencode", ExtraArgs: []string{"--dir", "/"}},
			wantErr: []string{`--dir "/" points outside the workspace`}},
		{name: "opencode permission env", role: loop.RoleCheck, o: CLIOptions{Kind: "opencode", Env: []string{`OPENCODE_PERMISSION={"edit":"allow"}`}},
			wantErr: []string{"env OPENCODE_PERMISSION drops opencode's own permission checks"}},
		{name: "opencode config with permission", role: loop.RoleDo, o: CLIOptions{Kind: "opencode", Env: []string{`OPENCODE_CONFIG_CONTENT={"permission":{"bash":"allow"}}`}},
			wantErr: []string{`"permission" settings`}},
		{name: "opencode config with a provider", role: loop.RolePlan, o: CLIOptions{Kind: "opencode", Env: []string{`OPENCODE_CONFIG_CONTENT={"provider":{"anthropic":{}}}`}}},

		// environment
		{name: "git dir in env", role: loop.RoleDo, o: CLIOptions{Kind: "gemini", Env: []string{"GIT_DIR=/elsewhere/.git"}},
			wantErr: []string{"GIT_DIR would point the agent's git at another repository"}},
		{name: "env without value", role: loop.RoleDo, o: CLIOptions{Kind: "codex", Env: []string{"CODEX_API_KEY"}},
			wantErr: []string{`"CODEX_API_KEY" is not NAME=value`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("IS_SANDBOX", "")
			a, err := newCLIAgent(tc.role, tc.o, tc.euid)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.NotNil(t, a)
				return
			}
			require.Error(t, err)
			assert.Nil(t, a)
			for _, want := range tc.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestCLIFlagTablesMatchHelp: every option git-norma knows for a CLI is in its captured
// --help (hidden ones are the documented exceptions), so the tables cannot drift into
// options that do not exist.
func TestCLIFlagTablesMatchHelp(t *testing.T) {
	for _, kind := range CLIKinds {
		t.Run(kind, func(t *testing.T) {
			help := readHelp(t, kind)
			table := parseFlagTable(backends[kind].flags)
			require.NotEmpty(t, table)
			for name, f := range table {
				if f.hidden {
					assert.False(t, helpHas(help, name), "%s is in the help now; drop the hidden mark", name)
					continue
				}
				assert.True(t, helpHas(help, name), "%s is not in %s", name, cliHelp[kind])
			}
		})
	}
}

func TestParseExtraArgs(t *testing.T) {
	table := parseFlagTable(`-a|--alpha -b|--beta= --list* --opt? !--hidden=`)
	tests := []struct {
		args    []string
		want    [][]string // values per option
		wantErr string
	}{
		{args: []string{"-a", "--beta", "x", "--list", "1", "2", "--opt"}, want: [][]string{nil, {"x"}, {"1", "2"}, nil}},
		{args: []string{"--beta=-x", "-by", "--opt", "v", "--hidden", "h"}, want: [][]string{{"-x"}, {"y"}, {"v"}, {"h"}}},
		{args: []string{"--list=1", "2", "-a"}, want: [][]string{{"1", "2"}, nil}},
		{args: []string{"--list"}, wantErr: "--list needs at least one value"},
		{args: []string{"--beta"}, wantErr: "--beta needs a value"},
		{args: []string{"--alpha=1"}, wantErr: "takes no value"},
		{args: []string{"-ab"}, wantErr: `unknown option "-ab"`},
		{args: []string{"--", "x"}, wantErr: `"--" is not an option`},
		{args: []string{"-"}, wantErr: `"-" is not an option`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parseExtraArgs("x", table, tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			var values [][]string
			for _, a := range got {
				values = append(values, a.values)
			}
			assert.Equal(t, tc.want, values)
		})
	}
}

func TestSplitList(t *testing.T) {
	assert.Equal(t, []string{"Read", "Bash(git status *)", "Edit", "Glob"}, splitList([]string{"Read,Bash(git status *)", "Edit Glob"}))
	assert.Empty(t, splitList([]string{""}))
}
