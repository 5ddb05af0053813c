package loop

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseReadyContract(t *testing.T) {
	tests := []struct {
		name        string
		description string
		want        ReadyContract
	}{
		{
			name:        "inline fields",
			description: "Objective: Fix the login redirect\nArtifact: auth/login.go\nVerify: go test ./auth/...",
			want:        ReadyContract{Objective: "Fix the login redirect", Artifact: "auth/login.go", Verify: []string{"go test ./auth/..."}},
		},
		{
			name:        "inline verify keeps quotes, commas and pipes",
			description: `Verify: grep -q "a, b" out.txt | wc -l`,
			want:        ReadyContract{Verify: []string{`grep -q "a, b" out.txt | wc -l`}},
		},
		{
			name:        "list items under the header",
			description: "Verify:\n- go test ./...\n* go vet ./...\n1. make lint\n2) ./scripts/smoke.sh",
			want:        ReadyContract{Verify: []string{"go test ./...", "go vet ./...", "make lint", "./scripts/smoke.sh"}},
		},
		{
			name:        "blank line between the header and its items",
			description: "Verify:\n\n- go test ./...\n\nNotes: none",
			want:        ReadyContract{Verify: []string{"go test ./..."}},
		},
		{
			name:        "blank line between the header and a fence",
			description: "Verify:\n\n```sh\nmake test\n```",
			want:        ReadyContract{Verify: []string{"make test"}},
		},
		{
			name:        "checkbox list items",
			description: "Verify:\n- [ ] go test ./...\n- [x] go vet ./...",
			want:        ReadyContract{Verify: []string{"go test ./...", "go vet ./..."}},
		},
		{
			name:        "backtick spans inline are separate commands",
			description: "Verify: `go test ./...` and then `go vet ./...`",
			want:        ReadyContract{Verify: []string{"go test ./...", "go vet ./..."}},
		},
		{
			name:        "backtick span inside a list item is the command",
			description: "Verify:\n- run `make test` from the repo root\n- `./smoke.sh --fast`",
			want:        ReadyContract{Verify: []string{"make test", "./smoke.sh --fast"}},
		},
		{
			name: "fenced sh block keeps backticks, quotes and commas unchanged",
			description: "Objective: ship it\n\nVerify:\n```sh\n" +
				"go test -run 'TestA|TestB' ./...\n" +
				"test \"$(cat VERSION)\" = \"1.2, final\"\n" +
				"echo `date +%Y`, done\n" +
				"\n" +
				"  printf '%s\\n' a,b  \n" +
				"```\n",
			want: ReadyContract{Objective: "ship it", Verify: []string{
				"go test -run 'TestA|TestB' ./...",
				`test "$(cat VERSION)" = "1.2, final"`,
				"echo `date +%Y`, done",
				`printf '%s\n' a,b`,
			}},
		},
		{
			name:        "fenced block as written by git norma task add",
			description: "Make the widget blue.\n\nVerify:\n```sh\ngo test ./widget/...\ntest -f `go env GOPATH`/bin/x\n```\n",
			want:        ReadyContract{Verify: []string{"go test ./widget/...", "test -f `go env GOPATH`/bin/x"}},
		},
		{
			name:        "lines that look like fields inside a fence are commands",
			description: "Verify:\n```\nNotes: not a field\n- not a list item\n```",
			want:        ReadyContract{Verify: []string{"Notes: not a field", "- not a list item"}},
		},
		{
			name:        "bold headers",
			description: "**Objective:** tidy up\n- **Artifact**: docs/README.md\n**Verify:** `make docs`",
			want:        ReadyContract{Objective: "tidy up", Artifact: "docs/README.md", Verify: []string{"make docs"}},
		},
		{
			name:        "list-item headers",
			description: "- Objective: add a flag\n- Artifact: cmd/main.go\n- Verify: go build ./...\n- Notes (optional): none",
			want:        ReadyContract{Objective: "add a flag", Artifact: "cmd/main.go", Verify: []string{"go build ./..."}},
		},
		{
			name:        "headers are case-insensitive",
			description: "OBJECTIVE: shout\nverify: true",
			want:        ReadyContract{Objective: "shout", Verify: []string{"true"}},
		},
		{
			name:        "a field ends at the next field",
			description: "Verify:\n- make test\nNotes: - do not run make deploy\n- nor this\nArtifact: x.go",
			want:        ReadyContract{Artifact: "x.go", Verify: []string{"make test"}},
		},
		{
			name:        "verify ends at prose and at a blank line",
			description: "Verify:\n- make test\nThis paragraph is prose, not a command.\n- stray item\n\nVerify: make lint\n\n- not verify either",
			want:        ReadyContract{Verify: []string{"make test", "make lint"}},
		},
		{
			name:        "objective and artifact continue on following lines",
			description: "Objective: first line\nsecond line\n\nArtifact:\n- a.go\n- b.go",
			want:        ReadyContract{Objective: "first line second line", Artifact: "a.go b.go"},
		},
		{
			name:        "several Verify fields accumulate",
			description: "Verify: make a\nObjective: o\nVerify: make b",
			want:        ReadyContract{Objective: "o", Verify: []string{"make a", "make b"}},
		},
		{
			name:        "spike verify is plain text",
			description: "Verify: unknown resolved + notes captured",
			want:        ReadyContract{Verify: []string{"unknown resolved + notes captured"}},
		},
		{
			name:        "no contract",
			description: "Just some prose.\n- a list that belongs to no field\n```sh\nrm -rf /\n```",
			want:        ReadyContract{},
		},
		{
			name:        "empty verify header gives no command",
			description: "Verify:\nObjective: o",
			want:        ReadyContract{Objective: "o"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseReadyContract(tc.description)
			assert.Equal(t, tc.want.Objective, got.Objective, "objective")
			assert.Equal(t, tc.want.Artifact, got.Artifact, "artifact")
			assert.Equal(t, tc.want.Verify, got.Verify, "verify")
		})
	}
}

func TestParseAcceptance(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []AcceptanceCriterion
	}{
		{
			name: "checkbox list",
			text: "- [ ] login redirects to /home\n- [x] logout clears the cookie\n* [X] star bullets work",
			want: []AcceptanceCriterion{
				{ID: "AC-1", Text: "login redirects to /home", VerifyHints: []string{}},
				{ID: "AC-2", Text: "logout clears the cookie", VerifyHints: []string{}},
				{ID: "AC-3", Text: "star bullets work", VerifyHints: []string{}},
			},
		},
		{
			name: "numbered list",
			text: "1. first\n2) second",
			want: []AcceptanceCriterion{
				{ID: "AC-1", Text: "first", VerifyHints: []string{}},
				{ID: "AC-2", Text: "second", VerifyHints: []string{}},
			},
		},
		{
			name: "plain text is one criterion with whitespace collapsed",
			text: "  The report renders\n   in under   a second.  \n",
			want: []AcceptanceCriterion{{ID: "AC-1", Text: "The report renders in under a second.", VerifyHints: []string{}}},
		},
		{
			name: "continuation lines join the previous item",
			text: "- the CLI prints a summary\n  including the run id\n- exit code is 0",
			want: []AcceptanceCriterion{
				{ID: "AC-1", Text: "the CLI prints a summary including the run id", VerifyHints: []string{}},
				{ID: "AC-2", Text: "exit code is 0", VerifyHints: []string{}},
			},
		},
		{
			name: "prose before the first item is ignored",
			text: "Acceptance:\n- works",
			want: []AcceptanceCriterion{{ID: "AC-1", Text: "works", VerifyHints: []string{}}},
		},
		{
			name: "backtick spans become verify hints",
			text: "- tests pass: `go test ./...` and `go vet ./...`\n- docs build with `make docs`\n- no hint here",
			want: []AcceptanceCriterion{
				{ID: "AC-1", Text: "tests pass: `go test ./...` and `go vet ./...`", VerifyHints: []string{"go test ./...", "go vet ./..."}},
				{ID: "AC-2", Text: "docs build with `make docs`", VerifyHints: []string{"make docs"}},
				{ID: "AC-3", Text: "no hint here", VerifyHints: []string{}},
			},
		},
		{
			name: "hint on a continuation line",
			text: "- it builds\n  (check with `go build ./...`)",
			want: []AcceptanceCriterion{
				{ID: "AC-1", Text: "it builds (check with `go build ./...`)", VerifyHints: []string{"go build ./..."}},
			},
		},
		{
			name: "hint in plain text",
			text: "running `make check` succeeds",
			want: []AcceptanceCriterion{{ID: "AC-1", Text: "running `make check` succeeds", VerifyHints: []string{"make check"}}},
		},
		{name: "empty", text: "", want: []AcceptanceCriterion{}},
		{name: "whitespace only", text: " \n\t\n", want: []AcceptanceCriterion{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseAcceptance(tc.text)
			assert.NotNil(t, got)
			assert.Equal(t, tc.want, got)
		})
	}
}
