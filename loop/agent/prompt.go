package agent

import (
	"embed"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/template"

	"github.com/git-norma/git-norma/loop"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// promptTemplates are the role prompts: prompt.tmpl lays out rules, input and answer;
// plan/do/check/act.tmpl hold each role's rules (spec 5–8); repair.tmpl asks again.
// They are parsed on first use: most commands never build a prompt, and every command would
// otherwise pay for parsing them at start-up.
var promptTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("prompts").Option("missingkey=error").ParseFS(promptFS, "prompts/*.tmpl"))
})

// repairPreviousBytes bounds how much of a rejected answer the repair prompt quotes.
const repairPreviousBytes = 4 << 10

// promptData is what the templates see.
type promptData struct {
	Role         loop.Role
	TaskID       string
	StepIndex    int
	Iteration    int
	WorkDir      string
	InputPath    string
	ReadOnly     bool
	LastFailure  bool
	Input        string
	Schema       string
	StopReasons  string
	NativeSchema string
	// Error and Previous are the rejection and the rejected answer (repair only).
	Error    string
	Previous string
}

func (a *cliAgent) promptData(req loop.Request) (promptData, error) {
	input, err := os.ReadFile(req.InputPath)
	if err != nil {
		return promptData{}, fmt.Errorf("read the step input: %w", err)
	}
	_, lastFailure := req.Input.Context.Facts[loop.FactLastFailure]
	return promptData{
		Role: a.role, TaskID: req.Input.Task.ID, StepIndex: req.Input.Step.Index, Iteration: req.Input.Run.Iteration,
		WorkDir: req.WorkDir, InputPath: req.InputPath, ReadOnly: !a.role.Writes(), LastFailure: lastFailure,
		Input: strings.TrimSpace(string(input)), Schema: strings.TrimSpace(string(a.schema)),
		StopReasons: strings.Join(loop.StopReasonsAllowed, ", "), NativeSchema: a.b.answerHint,
	}, nil
}

// renderRepair asks once more, quoting why the answer was rejected.
func renderRepair(d promptData, rejection error, previous string) (string, error) {
	d.Error = rejection.Error()
	previous = strings.ToValidUTF8(strings.TrimSpace(previous), "?")
	if len(previous) > repairPreviousBytes {
		previous = strings.ToValidUTF8(previous[:repairPreviousBytes], "") + "\n[...]"
	}
	d.Previous = previous
	return render("repair", d)
}

func render(name string, d promptData) (string, error) {
	var b strings.Builder
	if err := promptTemplates().ExecuteTemplate(&b, name, d); err != nil {
		return "", fmt.Errorf("render the %s prompt: %w", name, err)
	}
	return b.String(), nil
}
