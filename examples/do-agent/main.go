// Command do-agent is git-norma's example Do agent: a small, deterministic exec agent that
// needs no API key. It reads the step's input JSON on stdin and makes a real change in the
// workspace (its working directory), then prints its output JSON on stdout.
//
// What it does: for the task's Ready Contract "Artifact: <path>" it writes the first
// double-quoted text of "Objective: ..." (or the task title) as a line of that file. A task
// such as
//
//	Objective: greet the world with "Hello, world"
//	Artifact: hello.txt
//	Verify: grep -q 'Hello, world' hello.txt
//
// therefore passes its check after one iteration.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// input is the part of git-norma's step input this agent reads.
type input struct {
	Task struct {
		ID          string `json:"id"`
		Title       string `json:"title"`
		Description string `json:"description"`
	} `json:"task"`
	Plan *struct {
		WorkPlan struct {
			DoSteps []struct {
				ID string `json:"id"`
			} `json:"do_steps"`
		} `json:"work_plan"`
	} `json:"plan"`
}

var (
	objectiveRE = regexp.MustCompile(`(?im)^\s*(?:[-*]\s+)?objective:\s*(.+)$`)
	artifactRE  = regexp.MustCompile(`(?im)^\s*(?:[-*]\s+)?artifact:\s*(.+)$`)
	quotedRE    = regexp.MustCompile(`"([^"]+)"`)
)

func main() {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "do-agent: cannot read the input JSON: %v\n", err)
		os.Exit(1)
	}
	path, text, err := work(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "do-agent: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "do-agent: wrote %q to %s\n", text, path)
	printOutput(in, path, text)
}

// work writes the objective's text into the artifact, unless the file already has it.
func work(in input) (string, string, error) {
	m := artifactRE.FindStringSubmatch(in.Task.Description)
	if m == nil {
		return "", "", fmt.Errorf("task %s has no \"Artifact: <path>\" line in its description", in.Task.ID)
	}
	path := strings.Trim(strings.TrimSpace(m[1]), "`")
	if filepath.IsAbs(path) || strings.HasPrefix(filepath.Clean(path), "..") {
		return "", "", fmt.Errorf("artifact %q is outside the workspace", path)
	}
	text := in.Task.Title
	if o := objectiveRE.FindStringSubmatch(in.Task.Description); o != nil {
		text = strings.TrimSpace(o[1])
		if q := quotedRE.FindStringSubmatch(text); q != nil {
			text = q[1]
		}
	}
	old, _ := os.ReadFile(path)
	if strings.Contains(string(old), text) {
		return path, text, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", err
	}
	return path, text, os.WriteFile(path, append(old, []byte(text+"\n")...), 0o644)
}

func printOutput(in input, path, text string) {
	executed := []string{}
	if in.Plan != nil {
		for _, s := range in.Plan.WorkPlan.DoSteps {
			executed = append(executed, s.ID)
		}
	}
	summary := fmt.Sprintf("wrote %q to %s", text, path)
	out := map[string]any{
		"status":      "ok",
		"stop_reason": "none",
		"summary":     map[string]any{"text": summary, "warnings": []string{}, "errors": []string{}},
		"progress":    map[string]any{"title": "Do: " + summary, "details": []string{"executed " + strings.Join(executed, ", ")}},
		"do": map[string]any{
			"execution": map[string]any{"executed_step_ids": executed, "skipped_step_ids": []string{}, "commands": []any{}},
			"blockers":  []any{},
		},
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
