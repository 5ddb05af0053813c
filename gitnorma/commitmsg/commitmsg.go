// Package commitmsg writes the landing commit's message: a Conventional Commit header made from
// the task and the plan's proposal, a body with the goal and the acceptance results, and the
// Norma-* trailers that tie the commit to its task, run and verdict.
package commitmsg

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// maxHeader is the longest Conventional Commit header git-norma writes; a proposed scope is
// dropped rather than squeezing the subject below minSubject.
const (
	maxHeader  = 72
	minSubject = 20
)

var scopeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*$`) })

// titlePrefixRE matches a Conventional Commit prefix a task title may already start with:
// type, optional (scope), optional !, a colon, then a space or the end of the title.
var titlePrefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z]+)(?:\(([^()]*)\))?(!)?:(?: |$)`) })

// titlePrefix is a valid Conventional Commit prefix found at the start of a task title.
type titlePrefix struct {
	typ, scope string
	breaking   bool
	rest       string // the title after the prefix
}

// splitTitlePrefix finds a valid Conventional Commit prefix at the start of title (whitespace
// already collapsed): a known type and, if present, a scope scopeRE accepts, both compared
// case-insensitively (as Conventional Commits says) and returned lower-case. Anything else
// (an unknown word such as "Note:", an invalid scope) is not a prefix and stays in the subject.
func splitTitlePrefix(title string) (titlePrefix, bool) {
	m := titlePrefixRE().FindStringSubmatchIndex(title)
	if m == nil {
		return titlePrefix{}, false
	}
	p := titlePrefix{typ: strings.ToLower(title[m[2]:m[3]]), breaking: m[6] >= 0, rest: strings.TrimSpace(title[m[1]:])}
	if !slices.Contains(config.ConventionalTypes, p.typ) {
		return titlePrefix{}, false
	}
	if m[4] >= 0 {
		p.scope = strings.ToLower(title[m[4]:m[5]])
		if !scopeRE().MatchString(p.scope) {
			return titlePrefix{}, false
		}
	}
	return p, true
}

// Message is the landing commit's message (DESIGN.md section 5): a Conventional Commit
// header from the task title, a body with the goal and the acceptance results, and trailers
// that `git interpret-trailers --parse` lists.
func Message(cfg config.Commit, t tracker.Task, plan *loop.Plan, check *loop.Check, runID string, step int) string {
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
	// Titles, goals and results are an agent's words: nothing in them may work the terminal of
	// whoever reads git log.
	return loop.Printable(b.String())
}

// commitHeader is <type>[(<scope>)][!]: <subject>, at most maxHeader characters.
//
// The type is the Plan's valid proposal, else the task's issue type through type_map, else
// default_type. A title that already starts with a valid Conventional Commit prefix
// ("fix(auth)!: ...") is the user's explicit choice: its type wins over the Plan's and the
// map's, its scope over the Plan's, and the prefix is not repeated in the subject. The change is
// marked breaking (!) if either the title or the Plan says so.
func commitHeader(cfg config.Commit, t tracker.Task, plan *loop.Plan) string {
	typ, scope, breaking := commitType(cfg, t), "", false
	if plan != nil && plan.Commit != nil {
		if slices.Contains(config.ConventionalTypes, plan.Commit.Type) {
			typ = plan.Commit.Type
		}
		if scopeRE().MatchString(plan.Commit.Scope) {
			scope = plan.Commit.Scope
		}
		breaking = plan.Commit.Breaking
	}
	if p, ok := splitTitlePrefix(strings.Join(strings.Fields(t.Title), " ")); ok {
		typ, t.Title = p.typ, p.rest
		if p.scope != "" {
			scope = p.scope
		}
		breaking = breaking || p.breaking
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

func commitType(cfg config.Commit, t tracker.Task) string {
	return cmp.Or(cfg.TypeMap[t.IssueType], cfg.DefaultType, "feat")
}

// subject is the task title on one line, without a trailing period, cut at a word boundary
// to fit in n characters.
func subject(t tracker.Task, n int) string {
	s := cmp.Or(strings.TrimRight(strings.Join(strings.Fields(t.Title), " "), "."), "complete "+t.ID)
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

// wrapText wraps at spaces to width, indenting continuation lines of list items. A command in
// backticks is never broken (nor its spaces changed): a line may run long instead, so that
// it can be copied whole.
func wrapText(text string, width int) string {
	indent := ""
	if strings.HasPrefix(text, "- ") {
		indent = "  "
	}
	var lines []string
	line := ""
	for _, w := range wrapWords(text) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) > width:
			lines = append(lines, line)
			line = indent + w
		default:
			line += " " + w
		}
	}
	return strings.Join(append(lines, line), "\n")
}

// wrapWords splits text at whitespace outside backtick spans; a span stays one word, as is but
// for its line breaks, which become spaces: a plan's text must not make lines of its own in the
// message (one that reads like a trailer, say).
func wrapWords(text string) []string {
	var words []string
	var cur strings.Builder
	quoted := false
	for _, r := range text {
		switch {
		case r == '`':
			quoted = !quoted
			cur.WriteRune(r)
		case !quoted && unicode.IsSpace(r):
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
		case quoted && strings.ContainsRune("\n\r\v\f\u0085\u2028\u2029", r):
			cur.WriteRune(' ')
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}
