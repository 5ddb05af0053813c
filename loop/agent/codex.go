package agent

import (
	"errors"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/loop"
)

// codexCLI runs `codex exec --json ... --output-schema <file> -o <file> -`, the prompt
// on stdin, the answer in the last agent message (CONTRACT.md §2).
var codexCLI = cliBackend{
	flags: `
-c|--config= --enable= --disable= --strict-config -i|--image* -m|--model= --oss --local-provider=
-p|--profile= -s|--sandbox= --approve-for-me --dangerously-bypass-approvals-and-sandbox
--dangerously-bypass-hook-trust -C|--cd= --worktree --add-dir= --thread-source=
--cyber-access-program= --skip-git-repo-check --trust --ephemeral --ignore-user-config
--ignore-rules --output-schema= --color= --json -o|--output-last-message= -h|--help -V|--version
`,
	rules: map[string]argRule{
		"--json": reserved("git-norma passes --json itself"), "--output-last-message": reserved("git-norma passes -o itself"),
		"--output-schema": reserved("the role's output schema"), "--ephemeral": reserved("git-norma passes --ephemeral itself"),
		"--worktree": ownWorktree,
		"--dangerously-bypass-approvals-and-sandbox": {class: argUnsandboxed, why: "commands run without the sandbox", slot: slotSandbox},
		"--dangerously-bypass-hook-trust":            unsandboxed("hooks run without trust checks"),
		"--trust":                                    unsandboxed("it trusts MCP commands outside the sandbox, persistently"),
		"--approve-for-me":                           writes("it approves through the workspace-write sandbox"),
	},
	vet:        codexVet,
	argv:       codexArgv,
	parse:      codexParse,
	install:    "npm install -g @openai/codex",
	answerHint: "Your final message is this object; it is checked against the schema.",
}

// Slots of git-norma's codex defaults that extra options can take over.
const (
	slotSandbox = "sandbox"
	slotCd      = "cd"
)

func codexVet(_ loop.Role, a cliArg) argRule {
	switch a.flag.name {
	case "--sandbox":
		return codexSandbox(a.values[0])
	case "--cd":
		return argRule{slot: slotCd, dirs: a.values}
	case "--add-dir":
		return argRule{class: argWrite, why: "it adds a writable directory", dirs: a.values}
	case "--config":
		return codexConfig(a.values[0])
	}
	return argRule{}
}

// codexSandbox judges a sandbox mode: read-only is what plan and check get, workspace-write
// what do and act get, danger-full-access drops the sandbox.
func codexSandbox(mode string) argRule {
	switch strings.Trim(mode, `"'`) {
	case "read-only":
		return argRule{slot: slotSandbox}
	case "workspace-write":
		return argRule{class: argWrite, why: "the workspace-write sandbox", slot: slotSandbox}
	case "danger-full-access":
		return argRule{class: argUnsandboxed, why: "commands run without the sandbox", slot: slotSandbox}
	}
	return argRule{class: argUnsandboxed, why: "unknown sandbox mode " + mode, slot: slotSandbox}
}

// codexConfig judges a -c key=value override by its key.
func codexConfig(kv string) argRule {
	key, value, _ := strings.Cut(kv, "=")
	switch key = strings.TrimSpace(key); {
	case key == "sandbox_mode":
		return codexSandbox(strings.TrimSpace(value))
	case key == "model":
		return commonRules["--model"]
	case key == "sandbox_workspace_write.writable_roots":
		return reserved("writable roots point outside the workspace; the workspace is already writable for do and act")
	case strings.HasPrefix(key, "mcp_servers"):
		return writes("it adds MCP tools git-norma cannot vet")
	}
	return argRule{}
}

func codexArgv(role loop.Role, inv cliInvocation) []string {
	return slices.Concat([]string{"exec"}, inv.extra, []string{"--json"},
		inv.unless(slotCd, "-C", inv.workDir),
		inv.unless(slotSandbox, "-s", byRole(role, "read-only", "workspace-write")),
		inv.modelArgs("-m"),
		[]string{"--output-schema", inv.schemaFile, "-o", inv.lastMessage, "--ephemeral", "-"})
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Error   struct {
		Message string `json:"message"`
	} `json:"error"`
	Item struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
	Usage struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

func codexParse(e cliEnvelope) (cliAnswer, error) {
	var ans cliAnswer
	var failed, lastErr string
	completed, events := false, 0
	skipped, err := jsonEvents(e, func(ev codexEvent) {
		events++
		switch ev.Type {
		case "item.completed":
			if ev.Item.Type == "agent_message" {
				ans.text = ev.Item.Text
			}
		case "turn.completed":
			completed = true
			ans.usage.InputTokens += ev.Usage.InputTokens
			ans.usage.OutputTokens += ev.Usage.OutputTokens
		case "turn.failed":
			failed = ev.Error.Message
		case "error":
			lastErr = ev.Message
		}
	})
	switch {
	case err != nil:
		return ans, err
	case failed != "":
		return ans, codexFailure(failed)
	case !completed && events == 0 && strings.Contains(string(e.stderr), "--skip-git-repo-check"):
		return ans, cliErrorf(ErrKindRefused, "codex", "%s: git-norma runs codex in the run's git worktree; if the workspace is no git repository, add --skip-git-repo-check to extra_args", lastLine(e.stderr))
	case e.exitCode != 0 && lastErr != "":
		return ans, codexFailure(lastErr)
	case e.exitCode != 0:
		return ans, e.exitError()
	case !completed:
		return ans, cliErrorf(ErrKindNoAnswer, "codex", "the turn never completed (no turn.completed event)")
	}
	return codexLastMessage(e, ans, skipped)
}

// codexLastMessage prefers the -o file (the final message as codex wrote it) over the last
// agent_message event.
func codexLastMessage(e cliEnvelope, ans cliAnswer, skipped bool) (cliAnswer, error) {
	st, err := os.Stat(e.lastMessage)
	switch {
	case err == nil && st.Size() > loop.MaxOutputBytes:
		return ans, e.tooLong()
	case err == nil:
		f, err := loop.OpenRegular(e.lastMessage)
		if err != nil {
			return ans, err
		}
		data, err := io.ReadAll(io.LimitReader(f, loop.MaxOutputBytes))
		f.Close()
		if err != nil {
			return ans, err
		}
		if len(strings.TrimSpace(string(data))) > 0 {
			ans.text = string(data)
		}
	case !errors.Is(err, os.ErrNotExist):
		return ans, err
	}
	if strings.TrimSpace(ans.text) == "" {
		if skipped {
			return ans, e.tooLong()
		}
		return ans, cliErrorf(ErrKindNoAnswer, "codex", "the turn completed without a final agent message")
	}
	return ans, nil
}

var codexMissingEnvRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("Missing environment variable: `([^`]+)`") })

// codexFailure maps the message of turn.failed (or the last error event).
func codexFailure(msg string) error {
	if m := codexMissingEnvRE().FindStringSubmatch(msg); m != nil {
		return cliErrorf(ErrKindAuth, "codex", "%s: set %s in the agent's environment (the model provider's env_key)", msg, m[1])
	}
	switch status := httpStatusOf(msg); status {
	case 401, 403:
		return cliErrorf(ErrKindAuth, "codex", "%s (HTTP %d): set CODEX_API_KEY in the agent's environment (codex exec does not read OPENAI_API_KEY) or log in with `printenv OPENAI_API_KEY | codex login --with-api-key`", msg, status)
	case 429:
		return cliErrorf(ErrKindAgent, "codex", "rate limited (HTTP 429): %s; retry later", msg)
	}
	return cliErrorf(ErrKindAgent, "codex", "turn failed: %s", msg)
}
