package agent

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// opencodeCLI runs `opencode run --format json --dir <workspace>`, the prompt on stdin,
// the answer in the text of the last assistant message (CONTRACT.md §4). Permissions come
// from OPENCODE_PERMISSION: `--agent plan` is not read-only (its bash still runs).
var opencodeCLI = cliBackend{
	flags: `
-h|--help -v|--version --print-logs --log-level= --pure --command= -c|--continue -s|--session=
--fork --share -m|--model= --agent= --format= -f|--file* --title= --attach= -p|--password=
-u|--username= --dir= --port= --variant= --thinking -i|--interactive --auto
`,
	rules: map[string]argRule{
		"--command": reserved("git-norma passes the prompt itself"), "--format": reserved("the envelope must be json"),
		"--continue": freshSession, "--session": freshSession, "--fork": freshSession, "--interactive": headless,
		"--auto":   unsandboxed("it approves every permission request that is not explicitly denied"),
		"--attach": unsandboxed("the server runs with its own permissions, not git-norma's OPENCODE_PERMISSION"),
	},
	vet:        opencodeVet,
	vetEnv:     opencodeVetEnv,
	argv:       opencodeArgv,
	env:        opencodeEnv,
	parse:      opencodeParse,
	install:    "npm install -g opencode-ai",
	answerHint: "Your final message is this object and nothing else; git-norma checks it against the schema.",
}

// OPENCODE_PERMISSION per role. A denied tool is removed from the tool list; external
// directories are denied rather than left to "ask", which opencode run auto-rejects by
// ending the run without an answer.
const (
	opencodeReadOnly = `{"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"}`
	opencodeWrite    = `{"external_directory":"deny"}`
)

// slotDir is git-norma's --dir, which an extra --dir inside the workspace takes over.
const slotDir = "dir"

func opencodeVet(_ loop.Role, a cliArg) argRule {
	switch a.flag.name {
	case "--agent":
		if a.values[0] != "build" {
			return unsandboxed("an agent's own permission rules override git-norma's OPENCODE_PERMISSION (the plan agent still runs bash)")
		}
	case "--dir":
		return argRule{slot: slotDir, dirs: a.values}
	}
	return argRule{}
}

// opencodeVetEnv refuses environment that would replace git-norma's permission rules.
func opencodeVetEnv(_ loop.Role, name, value string) argRule {
	switch name {
	case "OPENCODE_PERMISSION":
		return unsandboxed("it replaces git-norma's permission rules for the role")
	case "OPENCODE_CONFIG_CONTENT":
		var cfg map[string]json.RawMessage
		if json.Unmarshal([]byte(value), &cfg) != nil {
			return reserved("it is not a JSON object")
		}
		for _, key := range []string{"permission", "agent", "mode"} {
			if _, ok := cfg[key]; ok {
				return unsandboxed("its \"" + key + "\" settings can override git-norma's permission rules")
			}
		}
	}
	return argRule{}
}

func opencodeArgv(_ loop.Role, inv cliInvocation) []string {
	return slices.Concat([]string{"run"}, inv.extra, []string{"--format", "json"},
		inv.unless(slotDir, "--dir", inv.workDir), inv.modelArgs("-m"))
}

func opencodeEnv(role loop.Role) []string {
	return []string{"OPENCODE_PERMISSION=" + byRole(role, opencodeReadOnly, opencodeWrite)}
}

// opencodeEvent is one line of `opencode run --format json`.
type opencodeEvent struct {
	Type string `json:"type"`
	Part struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		MessageID string `json:"messageID"`
		Reason    string `json:"reason"`
		Tokens    struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"tokens"`
		Cost float64 `json:"cost"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

func opencodeParse(e cliEnvelope) (cliAnswer, error) {
	var ans cliAnswer
	var text strings.Builder
	var lastID, reason string
	var failure *opencodeEvent
	tooLong := false
	skipped, err := jsonEvents(e, func(ev opencodeEvent) {
		switch ev.Type {
		case "text":
			if ev.Part.MessageID != lastID {
				text.Reset()
				lastID = ev.Part.MessageID
			}
			if text.Len()+len(ev.Part.Text) > loop.MaxOutputBytes {
				tooLong = true
				return
			}
			text.WriteString(ev.Part.Text)
		case "step_finish":
			reason = ev.Part.Reason
			ans.usage.InputTokens += ev.Part.Tokens.Input
			ans.usage.OutputTokens += ev.Part.Tokens.Output
			ans.usage.CostUSD += ev.Part.Cost
		case "error":
			failure = &ev
		}
	})
	switch {
	case err != nil:
		return ans, err
	case failure != nil && failure.Error != nil:
		return ans, opencodeFailure(failure)
	case e.exitCode != 0:
		return ans, e.exitError()
	case tooLong || (skipped && text.Len() == 0):
		return ans, e.tooLong()
	case reason != "stop" || text.Len() == 0:
		return ans, opencodeNoAnswer(e, reason)
	}
	ans.text = text.String()
	return ans, nil
}

// opencodeNoAnswer explains a run that ended without final text: usually a permission
// request opencode run auto-rejected.
func opencodeNoAnswer(e cliEnvelope, reason string) error {
	for _, line := range strings.Split(ansiRE().ReplaceAllString(string(e.stderr), ""), "\n") {
		if i := strings.Index(line, "permission requested"); i >= 0 {
			return cliErrorf(ErrKindNoAnswer, "opencode", "the run ended without a final answer: %s (opencode run rejects what its permission rules leave to \"ask\"; the agent tried something outside them)", strings.TrimSpace(line[i:]))
		}
	}
	return cliErrorf(ErrKindNoAnswer, "opencode", "the run ended without a final answer (last step finished with reason %q)", reason)
}

func opencodeFailure(ev *opencodeEvent) error {
	name, msg, status := ev.Error.Name, ev.Error.Data.Message, ev.Error.Data.StatusCode
	switch {
	case status == 401 || status == 403:
		return cliErrorf(ErrKindAuth, "opencode", "%s (HTTP %d): set the API key of the model's provider (e.g. ANTHROPIC_API_KEY for anthropic/..., OPENAI_API_KEY for openai/...) in the agent's environment", msg, status)
	case status == 429:
		return cliErrorf(ErrKindAgent, "opencode", "rate limited (HTTP 429): %s; retry later", msg)
	}
	return cliErrorf(ErrKindAgent, "opencode", "%s: %s", name, msg)
}
