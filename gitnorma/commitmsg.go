package gitnorma

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// maxHeader is the longest Conventional Commit header git-norma writes; a proposed scope is
// dropped rather than squeezing the subject below minSubject.
const (
	maxHeader  = 72
	minSubject = 20
)

// conventionalTypes are the types a Plan may propose (Conventional Commits and the common
// Angular set).
var conventionalTypes = []string{"feat", "fix", "docs", "style", "refactor", "perf", "test", "build", "ci", "chore", "revert"}

var scopeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*$`)

// CommitMessage is the landing commit's message (DESIGN.md section 5): a Conventional Commit
// header from the task title, a body with the goal and the acceptance results, and trailers
// that `git interpret-trailers --parse` lists.
func CommitMessage(cfg Commit, t tracker.Task, plan *loop.Plan, check *loop.Check, runID string, step int) string {
	var b strings.Builder
	b.WriteString(commitHeader(cfg, t, plan) + "\n\n")
	if plan != nil && plan.Goal != "" {
		b.WriteString(wrapText("Goal: "+plan.Goal, maxHeader) + "\n\n")
	}
	if check != nil && len(check.AcceptanceResults) > 0 {
		b.WriteString("Acceptance:\n")
		for _, r := range check.AcceptanceResults {
			b.WriteString(wrapText(fmt.Sprintf("- %s %s: %s", r.ACID, r.Result, criterionText(plan, r.ACID)), maxHeader) + "\n")
		}
		b.WriteString("\n")
	}
	verdict := "PASS"
	if check != nil {
		verdict = check.Verdict.Status
	}
	fmt.Fprintf(&b, "Norma-Task: %s\nNorma-Run: %s\nNorma-Step: %03d\nNorma-Verdict: %s\n", t.ID, runID, step, verdict)
	if cfg.CoAuthor != "" {
		fmt.Fprintf(&b, "Co-authored-by: %s\n", cfg.CoAuthor)
	}
	return b.String()
}

// commitHeader is <type>[(<scope>)][!]: <subject>, at most maxHeader characters.
func commitHeader(cfg Commit, t tracker.Task, plan *loop.Plan) string {
	typ, scope, breaking := commitType(cfg, t), "", false
	if plan != nil && plan.Commit != nil {
		if slices.Contains(conventionalTypes, plan.Commit.Type) {
			typ = plan.Commit.Type
		}
		if scopeRE.MatchString(plan.Commit.Scope) {
			scope = plan.Commit.Scope
		}
		breaking = plan.Commit.Breaking
	}
	prefix := typ
	if scope != "" && len(typ)+len(scope)+4 <= maxHeader-minSubject {
		prefix += "(" + scope + ")"
	}
	if breaking {
		prefix += "!"
	}
	prefix += ": "
	return prefix + subject(t, maxHeader-len([]rune(prefix)))
}

func commitType(cfg Commit, t tracker.Task) string {
	if typ, ok := cfg.TypeMap[t.IssueType]; ok && typ != "" {
		return typ
	}
	if cfg.DefaultType != "" {
		return cfg.DefaultType
	}
	return "feat"
}

// subject is the task title on one line, without a trailing period, cut at a word boundary
// to fit in n characters.
func subject(t tracker.Task, n int) string {
	s := strings.TrimRight(strings.Join(strings.Fields(t.Title), " "), ".")
	if s == "" {
		s = "complete " + t.ID
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	n = max(n, 2)
	cut := r[:n-1]
	if i := lastSpace(cut); i > n/2 {
		cut = cut[:i]
	}
	return string(cut) + "…"
}

// lastSpace is the rune index of the last space in r, or -1.
func lastSpace(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == ' ' {
			return i
		}
	}
	return -1
}

func criterionText(plan *loop.Plan, id string) string {
	if plan != nil {
		for _, ac := range plan.AcceptanceCriteria.Effective {
			if ac.ID == id {
				return ac.Text
			}
		}
	}
	return ""
}

// wrapText wraps at spaces to width, indenting continuation lines of list items.
func wrapText(text string, width int) string {
	indent := ""
	if strings.HasPrefix(text, "- ") {
		indent = "  "
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = indent + w
			continue
		}
		if line == "" {
			line = w
		} else if line == indent {
			line += w
		} else {
			line += " " + w
		}
	}
	return strings.Join(append(lines, line), "\n")
}
