package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// claudeCLI runs Claude Code: `claude -p --output-format json --json-schema '<schema>'`,
// the prompt on stdin, the answer in the result's structured_output (CONTRACT.md §1).
var claudeCLI = cliBackend{
	flags: `
--add-dir* --agent= --agents= --allow-dangerously-skip-permissions --allowedTools|--allowed-tools*
--append-system-prompt= --ax-screen-reader --bg|--background --bare --betas* --brief --chrome
-c|--continue --dangerously-skip-permissions -d|--debug? --debug-file= --disable-slash-commands
--disallowedTools|--disallowed-tools* --effort= --exclude-dynamic-system-prompt-sections
--fallback-model= --file* --fork-session --from-pr? -h|--help --ide --include-hook-events
--include-partial-messages --input-format= --json-schema= --max-budget-usd= --mcp-config*
--model= -n|--name= --no-chrome --no-session-persistence --output-format= --permission-mode=
--plugin-dir= --plugin-url= -p|--print --prompt-suggestions? --remote-control?
--remote-control-session-name-prefix= --replay-user-messages -r|--resume? --safe-mode
--session-id= --setting-sources= --settings= --strict-mcp-config --system-prompt= --tmux
--tools* --verbose -v|--version -w|--worktree? !--max-turns=
`,
	rules: map[string]argRule{
		"--print": reserved("git-norma passes -p itself"), "--output-format": reserved("the envelope must be json"),
		"--json-schema": reserved("the role's output schema"), "--input-format": reserved("the prompt is text on stdin"),
		"--replay-user-messages": reserved("the prompt is text on stdin"), "--remote-control": headless,
		"--continue": freshSession, "--resume": freshSession, "--from-pr": freshSession, "--fork-session": freshSession,
		"--worktree": ownWorktree, "--tmux": ownWorktree, "--background": reserved("git-norma waits for the answer"),
		"--mcp-config": writes(claudeUnvetted), "--agents": writes(claudeUnvetted), "--agent": writes(claudeUnvetted),
		"--plugin-dir": writes(claudeUnvetted), "--plugin-url": writes(claudeUnvetted),
		"--dangerously-skip-permissions":       {class: argUnsandboxed, why: "every tool call runs unasked; " + claudeRootTrap, slot: slotBypass},
		"--allow-dangerously-skip-permissions": unsandboxed("it makes the bypass available; " + claudeRootTrap),
	},
	vet:        claudeVet,
	argv:       claudeArgv,
	env:        claudeEnv,
	parse:      claudeParse,
	install:    "npm install -g @anthropic-ai/claude-code",
	answerHint: "Deliver the object by calling the StructuredOutput tool once, at the end; claude checks it against the schema.",
}

// Slots of git-norma's claude defaults that extra options can take over.
const (
	slotTools   = "tools"
	slotPerm    = "permission"
	slotAllowed = "allowed"
	// slotBypass marks a run without claude's permission checks (the root trap).
	slotBypass = "bypass"
)

// claudeMaxRetries is CLAUDE_CODE_MAX_RETRIES when the user did not set it: claude retried
// a 401 nine times in two minutes; two retries ride out an overload without burning the
// step's time budget on a bad key.
const claudeMaxRetries = "2"

// claudeReadOnlyTools are the tools a plan or check agent gets: none of them writes.
var claudeReadOnlyTools = []string{"Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch"}

const (
	claudeRootTrap = "as root claude also refuses it unless IS_SANDBOX=1 is in its environment: add IS_SANDBOX=1 to the agent's env too"
	claudeUnvetted = "it adds tools git-norma cannot vet"
)

func claudeVet(role loop.Role, a cliArg) argRule {
	name := a.flag.name
	switch name {
	case "--permission-mode":
		return claudePermissionMode(a.values[0])
	case "--tools", "--allowed-tools":
		slot := map[string]string{"--tools": slotTools, "--allowed-tools": slotAllowed}[name]
		for _, tool := range splitList(a.values) {
			base, _, _ := strings.Cut(tool, "(")
			if !slices.Contains(claudeReadOnlyTools, base) {
				return argRule{class: argWrite, why: "tool " + tool + " can change files", slot: slot}
			}
		}
		return argRule{slot: slot}
	case "--add-dir":
		return argRule{dirs: splitList(a.values)}
	case "--settings":
		if strings.Contains(a.values[0], "bypassPermissions") {
			return argRule{class: argUnsandboxed, why: "the settings switch to bypassPermissions; " + claudeRootTrap, slot: slotBypass}
		}
		return writes("settings can allow tools and change the permission mode")
	}
	return argRule{}
}

// claudePermissionMode judges --permission-mode: default, dontAsk and plan deny writes;
// acceptEdits and auto allow them; bypassPermissions drops every check.
func claudePermissionMode(mode string) argRule {
	switch mode {
	case "default", "dontAsk", "plan":
		return argRule{slot: slotPerm}
	case "acceptEdits", "auto":
		return argRule{class: argWrite, why: "mode " + mode + " approves file edits", slot: slotPerm}
	case "bypassPermissions":
		return argRule{class: argUnsandboxed, why: "every tool call runs unasked; " + claudeRootTrap, slot: slotBypass}
	}
	return argRule{class: argUnsandboxed, why: "unknown permission mode " + mode, slot: slotPerm}
}

func claudeArgv(role loop.Role, inv cliInvocation) []string {
	args := slices.Concat([]string{"-p"}, inv.extra, []string{"--output-format", "json"}, inv.modelArgs("--model"))
	if !role.Writes() {
		args = append(args, inv.unless(slotTools, "--tools", "Read,Grep,Glob")...)
	} else {
		if !inv.replaced[slotBypass] {
			args = append(args, inv.unless(slotPerm, "--permission-mode", "acceptEdits")...)
		}
		args = append(args, inv.unless(slotAllowed, "--allowedTools", "Bash")...)
	}
	return append(args, "--json-schema", inv.schema)
}

func claudeEnv(loop.Role) []string {
	if _, set := os.LookupEnv("CLAUDE_CODE_MAX_RETRIES"); set {
		return nil
	}
	return []string{"CLAUDE_CODE_MAX_RETRIES=" + claudeMaxRetries}
}

// claudeResult is the result object of --output-format json.
type claudeResult struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	IsError          bool            `json:"is_error"`
	APIErrorStatus   int             `json:"api_error_status"`
	Result           string          `json:"result"`
	Errors           []string        `json:"errors"`
	StructuredOutput json.RawMessage `json:"structured_output"`
	TotalCostUSD     float64         `json:"total_cost_usd"`
	Usage            struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage        map[string]claudeModelUsage `json:"modelUsage"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
}

type claudeModelUsage struct {
	OutputTokens int64 `json:"outputTokens"`
}

func claudeParse(e cliEnvelope) (cliAnswer, error) {
	var res *claudeResult
	skipped, err := jsonEvents(e, func(r claudeResult) {
		if r.Type == "result" {
			res = &r
		}
	})
	switch {
	case err != nil:
		return cliAnswer{}, err
	case res == nil && skipped:
		return cliAnswer{}, e.tooLong()
	case res == nil:
		return cliAnswer{}, claudeWithoutResult(e)
	}
	ans := cliAnswer{usage: res.usage(), text: res.Result}
	switch {
	case res.IsError:
		return ans, res.failure()
	case e.exitCode != 0:
		return ans, e.exitError()
	case len(res.StructuredOutput) == 0 || string(res.StructuredOutput) == "null":
		return ans, cliErrorf(ErrKindNoAnswer, "claude", "the result has no structured_output: the model answered without calling the StructuredOutput tool, so --json-schema was ignored (result starts with %q)", loop.Snippet([]byte(res.Result)))
	}
	ans.structured = res.StructuredOutput
	if n := len(res.PermissionDenials); n > 0 {
		var tools []string
		for _, d := range res.PermissionDenials {
			tools = append(tools, d.ToolName)
		}
		ans.warnings = []string{fmt.Sprintf("claude denied %d tool call(s): %s", n, strings.Join(tools, ", "))}
	}
	return ans, nil
}

// claudeWithoutResult explains a run that printed no result object.
func claudeWithoutResult(e cliEnvelope) error {
	switch {
	case strings.Contains(string(e.stderr), "root/sudo"):
		return cliErrorf(ErrKindRefused, "claude", "%s: claude refuses --dangerously-skip-permissions / bypassPermissions as root; add IS_SANDBOX=1 to the agent's env if this host is a sandbox, or run git-norma as a normal user", lastLine(e.stderr))
	case e.exitCode != 0:
		return e.exitError()
	}
	return cliErrorf(loop.ErrKindInvalidJSON, "claude", "stdout has no result object (expected the envelope of --output-format json)")
}

func (r *claudeResult) usage() loop.Usage {
	return loop.Usage{
		InputTokens:  r.Usage.InputTokens + r.Usage.CacheCreationInputTokens + r.Usage.CacheReadInputTokens,
		OutputTokens: r.Usage.OutputTokens, CostUSD: r.TotalCostUSD,
		Model: topModel(r.ModelUsage, func(m claudeModelUsage) int64 { return m.OutputTokens }),
	}
}

// failure maps an is_error result to what the user must do.
func (r *claudeResult) failure() error {
	detail := strings.Join(r.Errors, "; ")
	if detail == "" {
		detail = r.Result
	}
	switch r.Subtype {
	case "error_max_turns":
		return cliErrorf(ErrKindLimit, "claude", "reached max turns (%s): raise --max-turns in extra_args or make the task smaller", detail)
	case "error_max_budget_usd":
		return cliErrorf(ErrKindLimit, "claude", "reached --max-budget-usd (%s)", detail)
	case "error_max_structured_output_retries":
		return cliErrorf(ErrKindLimit, "claude", "the answer did not match the output schema after claude's own retries (%s)", detail)
	case "error_during_execution":
		return cliErrorf(ErrKindAgent, "claude", "error during execution: %s", detail)
	}
	status := r.APIErrorStatus
	switch {
	case status == 401 || status == 403 || strings.Contains(detail, "Not logged in") || strings.Contains(detail, "API key"):
		where := ""
		if status != 0 {
			where = fmt.Sprintf(" (HTTP %d)", status)
		}
		return cliErrorf(ErrKindAuth, "claude", "%s%s: set ANTHROPIC_API_KEY to a valid key (or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`) in the agent's environment", detail, where)
	case status == 429:
		return cliErrorf(ErrKindAgent, "claude", "rate limited (HTTP 429): %s; retry later", detail)
	case status != 0:
		return cliErrorf(ErrKindAgent, "claude", "API error (HTTP %d): %s", status, detail)
	}
	return cliErrorf(ErrKindAgent, "claude", "%s", detail)
}
