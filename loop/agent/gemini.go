package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// geminiCLI runs `gemini -p <instruction> -o stream-json --skip-trust`, the prompt on
// stdin (gemini appends -p to it), the answer in the assistant text (CONTRACT.md §3). Gemini
// has no schema flag: the schema is in the prompt and the answer is validated here.
var geminiCLI = cliBackend{
	flags: `
-d|--debug -m|--model= -p|--prompt= -i|--prompt-interactive= --skip-trust -w|--worktree? -s|--sandbox
-y|--yolo --approval-mode= --policy* --admin-policy* --acp --experimental-acp
--allowed-mcp-server-names* --allowed-tools* -e|--extensions* -l|--list-extensions -r|--resume=
--session-file= --session-id= --list-sessions --delete-session= --include-directories*
-o|--output-format= --raw-output --accept-raw-output-risk -v|--version -h|--help
`,
	rules: map[string]argRule{
		"--prompt": reserved("git-norma passes the prompt itself"), "--skip-trust": reserved("git-norma passes --skip-trust itself"),
		"--output-format": reserved("the envelope must be stream-json"), "--worktree": ownWorktree,
		"--prompt-interactive": headless, "--acp": headless, "--experimental-acp": headless,
		"--list-extensions": reserved("it lists and exits"), "--list-sessions": reserved("it lists and exits"),
		"--delete-session": reserved("it deletes and exits"), "--resume": freshSession, "--session-file": freshSession,
		"--policy": writes(geminiUnvetted), "--admin-policy": writes(geminiUnvetted), "--allowed-tools": writes(geminiUnvetted),
		"--allowed-mcp-server-names": writes(geminiUnvetted), "--extensions": writes(geminiUnvetted),
	},
	vet:        geminiVet,
	argv:       geminiArgv,
	env:        geminiEnv,
	parse:      geminiParse,
	install:    "npm install -g @google/gemini-cli",
	answerHint: "Your final message is this object and nothing else; git-norma checks it against the schema.",
}

const geminiUnvetted = "it can allow tools git-norma cannot vet"

// geminiPromptArg is the -p text; gemini appends it to the prompt read from stdin, and -p
// keeps it headless.
const geminiPromptArg = "Follow the instructions above. Your final message must be exactly one JSON object."

// slotApproval is git-norma's --approval-mode, which extra options can take over.
const slotApproval = "approval"

func geminiVet(role loop.Role, a cliArg) argRule {
	switch a.flag.name {
	case "--yolo":
		return geminiApproval(role, "yolo")
	case "--approval-mode":
		return geminiApproval(role, a.values[0])
	case "--include-directories":
		return argRule{dirs: splitList(a.values)}
	}
	return argRule{}
}

// geminiApproval judges an approval mode: headless default and plan offer no write or shell
// tool, auto_edit writes, yolo approves everything (do and act run with it).
func geminiApproval(role loop.Role, mode string) argRule {
	switch mode {
	case "default", "plan":
		return argRule{slot: slotApproval}
	case "auto_edit":
		return argRule{class: argWrite, why: "auto_edit approves file edits", slot: slotApproval}
	case "yolo":
		if !role.Writes() {
			return argRule{class: argUnsandboxed, why: "yolo approves every tool call, the shell included", slot: slotApproval}
		}
		return argRule{slot: slotApproval}
	}
	return argRule{class: argUnsandboxed, why: "unknown approval mode " + mode, slot: slotApproval}
}

func geminiArgv(role loop.Role, inv cliInvocation) []string {
	return slices.Concat([]string{"-p", geminiPromptArg}, inv.extra, []string{"-o", "stream-json", "--skip-trust"},
		inv.unless(slotApproval, "--approval-mode", byRole(role, "default", "yolo")),
		inv.modelArgs("-m"))
}

// geminiEnv trusts the workspace for this run (headless gemini exits 55 in an untrusted folder).
func geminiEnv(loop.Role) []string { return []string{"GEMINI_CLI_TRUST_WORKSPACE=true"} }

// geminiError is the error object of a stream result or of the -o json error on stderr.
type geminiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// geminiEvent is one line of `-o stream-json`.
type geminiEvent struct {
	Type    string       `json:"type"`
	Role    string       `json:"role"`
	Content string       `json:"content"`
	Delta   bool         `json:"delta"`
	Status  string       `json:"status"`
	Error   *geminiError `json:"error"`
	Stats   struct {
		InputTokens  int64                       `json:"input_tokens"`
		OutputTokens int64                       `json:"output_tokens"`
		Models       map[string]geminiModelStats `json:"models"`
	} `json:"stats"`
}

type geminiModelStats struct {
	OutputTokens int64 `json:"output_tokens"`
}

func geminiParse(e cliEnvelope) (cliAnswer, error) {
	var ans cliAnswer
	var result *geminiEvent
	var text strings.Builder
	tooLong := false
	skipped, err := jsonEvents(e, func(ev geminiEvent) {
		switch ev.Type {
		case "message":
			if ev.Role != "assistant" {
				return
			}
			if !ev.Delta {
				text.Reset()
			}
			if text.Len()+len(ev.Content) > loop.MaxOutputBytes {
				tooLong = true
				return
			}
			text.WriteString(ev.Content)
		case "tool_use", "tool_result":
			text.Reset() // the answer is the text after the last tool call
		case "result":
			result = &ev
		}
	})
	if err != nil {
		return ans, err
	}
	if result == nil {
		return ans, geminiWithoutResult(e, skipped)
	}
	ans.usage = loop.Usage{InputTokens: result.Stats.InputTokens, OutputTokens: result.Stats.OutputTokens,
		Model: topModel(result.Stats.Models, func(m geminiModelStats) int64 { return m.OutputTokens })}
	switch {
	case result.Status == "error":
		return ans, geminiFailure(result.Error, e.exitCode)
	case e.exitCode != 0:
		return ans, geminiExit(e)
	case tooLong || (skipped && text.Len() == 0):
		return ans, e.tooLong()
	}
	ans.text = text.String()
	return ans, nil
}

// geminiWithoutResult explains a run without a result event: the -o json error on stderr,
// or the exit code.
func geminiWithoutResult(e cliEnvelope, skipped bool) error {
	if ge := geminiStderrError(e.stderr); ge != nil {
		return geminiFailure(ge, e.exitCode)
	}
	switch {
	case e.exitCode != 0:
		return geminiExit(e)
	case skipped:
		return e.tooLong()
	}
	return cliErrorf(ErrKindNoAnswer, "gemini", "stdout has no result event (expected -o stream-json)")
}

// geminiStderrError finds the error JSON gemini prints last on stderr.
func geminiStderrError(stderr []byte) *geminiError {
	s := string(stderr)
	for i := strings.LastIndex(s, "\n{"); i >= 0; i = strings.LastIndex(s[:i], "\n{") {
		var v struct {
			Error *geminiError `json:"error"`
		}
		if json.Unmarshal([]byte(s[i+1:]), &v) == nil && v.Error != nil {
			return v.Error
		}
	}
	return nil
}

// geminiExitCodes are gemini's own exit codes (FatalError subclasses).
var geminiExitCodes = map[int]struct{ kind, msg string }{
	41:  {ErrKindAuth, "authentication failed (exit 41): set GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_API_KEY (or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), in the agent's environment"},
	42:  {ErrKindRefused, "input error (exit 42)"},
	44:  {ErrKindRefused, "sandbox error (exit 44)"},
	52:  {ErrKindRefused, "configuration error (exit 52): check ~/.gemini/settings.json"},
	53:  {ErrKindLimit, "reached the session's turn limit (exit 53)"},
	54:  {ErrKindAgent, "fatal tool error (exit 54)"},
	55:  {ErrKindRefused, "workspace not trusted (exit 55): git-norma passes --skip-trust and GEMINI_CLI_TRUST_WORKSPACE=true, so this gemini or its settings ignore them; trust the folder in gemini or upgrade it"},
	130: {ErrKindAgent, "cancelled (exit 130)"},
}

// geminiHTTP recovers an HTTP status from an exit code: gemini exits with the API error's
// code truncated to 8 bits (401 → 145).
func geminiHTTP(rc int) int {
	for _, s := range []int{400, 401, 403, 404, 408, 429, 500, 502, 503, 504} {
		if s&0xff == rc {
			return s
		}
	}
	return 0
}

func geminiExit(e cliEnvelope) error {
	if c, ok := geminiExitCodes[e.exitCode]; ok {
		if line := lastLine(e.stderr); line != "" {
			return cliErrorf(c.kind, "gemini", "%s: %s", c.msg, line)
		}
		return cliErrorf(c.kind, "gemini", "%s", c.msg)
	}
	if s := geminiHTTP(e.exitCode); s != 0 {
		return geminiFailure(&geminiError{Message: lastLine(e.stderr), Code: s}, e.exitCode)
	}
	return e.exitError()
}

// geminiFailure maps an error object (and the exit code) to what the user must do.
func geminiFailure(ge *geminiError, rc int) error {
	if ge == nil {
		ge = &geminiError{}
	}
	msg := innerErrorMessage(ge.Message)
	status := ge.Code
	if status == 0 {
		status = httpStatusOf(ge.Message)
	}
	if status == 0 {
		status = geminiHTTP(rc)
	}
	where := fmt.Sprintf("exit %d", rc)
	if status != 0 {
		where = fmt.Sprintf("HTTP %d, exit %d", status, rc)
	}
	switch {
	case rc == 41 || status == 401 || status == 403:
		return cliErrorf(ErrKindAuth, "gemini", "%s (%s): set GEMINI_API_KEY (or GOOGLE_API_KEY with GOOGLE_GENAI_USE_VERTEXAI=true) to a valid key in the agent's environment", msg, where)
	case status == 429:
		return cliErrorf(ErrKindAgent, "gemini", "rate limited (%s): %s; retry later", where, msg)
	}
	if c, ok := geminiExitCodes[rc]; ok {
		return cliErrorf(c.kind, "gemini", "%s: %s", c.msg, msg)
	}
	return cliErrorf(ErrKindAgent, "gemini", "%s (%s)", msg, where)
}

// innerErrorMessage digs the message out of an API error that was itself serialized into
// the message (`[API Error: {"error":{"message":"invalid x-api-key",...}}]`).
func innerErrorMessage(msg string) string {
	i, j := strings.Index(msg, "{"), strings.LastIndex(msg, "}")
	if i < 0 || j < i {
		return loop.OneLine(msg, 200)
	}
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg[i:j+1]), &v) == nil && v.Error.Message != "" {
		return v.Error.Message
	}
	return loop.OneLine(msg, 200)
}
