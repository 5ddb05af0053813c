package commitmsg

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

func planWith(typ, scope string, breaking bool) *loop.Plan {
	return &loop.Plan{Commit: &loop.CommitProposal{Type: typ, Scope: scope, Breaking: breaking}}
}

func TestCommitHeaderType(t *testing.T) {
	defaults := config.Default().Commit
	task := func(issueType string) tracker.Task {
		return tracker.Task{ID: "norma-a1", Title: "Fix the login redirect", IssueType: issueType}
	}
	tests := []struct {
		name string
		cfg  config.Commit
		task tracker.Task
		plan *loop.Plan
		want string
	}{
		{"plan type wins over the map", defaults, task("bug"), planWith("perf", "", false), "perf: Fix the login redirect"},
		{"plan type wins over the default", config.Commit{DefaultType: "chore"}, task("spike"), planWith("docs", "", false), "docs: Fix the login redirect"},
		{"invalid plan type falls back to the map", defaults, task("bug"), planWith("bugfix", "", false), "fix: Fix the login redirect"},
		{"capitalised plan type is invalid", defaults, task("chore"), planWith("Fix", "", false), "chore: Fix the login redirect"},
		{"empty plan type", defaults, task("chore"), planWith("", "", false), "chore: Fix the login redirect"},
		{"plan without a commit proposal", defaults, task("bug"), &loop.Plan{Goal: "x"}, "fix: Fix the login redirect"},
		{"no plan, type_map by issue type", defaults, task("bug"), nil, "fix: Fix the login redirect"},
		{"type_map feature", defaults, task("feature"), nil, "feat: Fix the login redirect"},
		{"issue type not in the map uses default_type", config.Commit{TypeMap: map[string]string{"bug": "fix"}, DefaultType: "refactor"}, task("epic"), nil, "refactor: Fix the login redirect"},
		{"empty map value uses default_type", config.Commit{TypeMap: map[string]string{"bug": ""}, DefaultType: "chore"}, task("bug"), nil, "chore: Fix the login redirect"},
		{"no map, no default: feat", config.Commit{}, task("bug"), nil, "feat: Fix the login redirect"},
		{"empty issue type, no default: feat", config.Commit{TypeMap: map[string]string{"bug": "fix"}}, task(""), nil, "feat: Fix the login redirect"},
		{"valid scope", defaults, task("bug"), planWith("fix", "auth", false), "fix(auth): Fix the login redirect"},
		{"scope with digits, dots, slashes, underscores and dashes", defaults, task("bug"), planWith("fix", "api/v2.1-x_y", false), "fix(api/v2.1-x_y): Fix the login redirect"},
		{"scope with a plus ignored", defaults, task("bug"), planWith("fix", "a+b", false), "fix: Fix the login redirect"},
		{"scope with slash", defaults, task("bug"), planWith("fix", "api/v2", false), "fix(api/v2): Fix the login redirect"},
		{"uppercase scope ignored", defaults, task("bug"), planWith("fix", "Auth", false), "fix: Fix the login redirect"},
		{"scope with a space ignored", defaults, task("bug"), planWith("fix", "log in", false), "fix: Fix the login redirect"},
		{"scope starting with a dash ignored", defaults, task("bug"), planWith("fix", "-auth", false), "fix: Fix the login redirect"},
		{"scope with parentheses ignored", defaults, task("bug"), planWith("fix", "a)(b", false), "fix: Fix the login redirect"},
		{"scope with a newline ignored", defaults, task("bug"), planWith("fix", "auth\nx", false), "fix: Fix the login redirect"},
		{"valid scope kept with an invalid type", defaults, task("bug"), planWith("bugfix", "auth", false), "fix(auth): Fix the login redirect"},
		{"breaking", defaults, task("feature"), planWith("feat", "", true), "feat!: Fix the login redirect"},
		{"breaking with scope", defaults, task("feature"), planWith("feat", "api", true), "feat(api)!: Fix the login redirect"},
		{"breaking with an invalid type", defaults, task("bug"), planWith("nope", "", true), "fix!: Fix the login redirect"},
		{"trailing period dropped", defaults, tracker.Task{ID: "norma-a1", Title: "Fix the login redirect.", IssueType: "bug"}, nil, "fix: Fix the login redirect"},
		{"whitespace collapsed", defaults, tracker.Task{ID: "norma-a1", Title: "  Fix\tthe\n\nlogin   redirect \n", IssueType: "bug"}, nil, "fix: Fix the login redirect"},
		{"empty title", defaults, tracker.Task{ID: "norma-a1", Title: "", IssueType: "bug"}, nil, "fix: complete norma-a1"},
		{"title of periods", defaults, tracker.Task{ID: "norma-a1.2", Title: " ... ", IssueType: "task"}, nil, "feat: complete norma-a1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, commitHeader(tt.cfg, tt.task, tt.plan))
		})
	}
}

// A title that already carries a Conventional Commit prefix keeps it, once: the title's type
// and scope are the user's explicit choice and win; breaking is marked if either side says so.
func TestCommitHeaderTitlePrefix(t *testing.T) {
	defaults := config.Default().Commit
	task := func(title, issueType string) tracker.Task {
		return tracker.Task{ID: "norma-a1", Title: title, IssueType: issueType}
	}
	tests := []struct {
		name string
		task tracker.Task
		plan *loop.Plan
		want string
	}{
		{"same type as the map", task("fix: Reject empty names", "bug"), nil, "fix: Reject empty names"},
		{"title type wins over the map", task("docs: Explain the config", "bug"), nil, "docs: Explain the config"},
		{"title type wins over the plan", task("fix: Reject empty names", "bug"), planWith("refactor", "", false), "fix: Reject empty names"},
		{"title scope", task("fix(cli): Reject empty names", "bug"), nil, "fix(cli): Reject empty names"},
		{"title scope wins over the plan's", task("fix(cli): Reject empty names", "bug"), planWith("fix", "tracker", false), "fix(cli): Reject empty names"},
		{"plan scope kept when the title has none", task("fix: Reject empty names", "bug"), planWith("feat", "cli", false), "fix(cli): Reject empty names"},
		{"title breaking", task("feat!: Drop the v1 API", "feature"), nil, "feat!: Drop the v1 API"},
		{"title scope and breaking", task("feat(api)!: Drop the v1 API", "feature"), nil, "feat(api)!: Drop the v1 API"},
		{"plan breaking added to the title's prefix", task("feat(api): Drop the v1 API", "feature"), planWith("feat", "", true), "feat(api)!: Drop the v1 API"},
		{"title breaking kept when the plan says not", task("feat!: Drop the v1 API", "feature"), planWith("feat", "", false), "feat!: Drop the v1 API"},
		{"type case-insensitive, written lower-case", task("Fix: Reject empty names", "task"), nil, "fix: Reject empty names"},
		{"scope case-insensitive, written lower-case", task("FEAT(CLI): Add a flag", "task"), nil, "feat(cli): Add a flag"},
		{"leading and inner whitespace", task("  fix:   Reject\tempty names ", "bug"), nil, "fix: Reject empty names"},
		{"prefix only", task("fix:", "bug"), nil, "fix: complete norma-a1"},
		{"prefix and periods", task("chore: ...", "bug"), nil, "chore: complete norma-a1"},
		{"unknown type is part of the subject", task("Note: Reject empty names", "bug"), nil, "fix: Note: Reject empty names"},
		{"no space after the colon is not a prefix", task("fix:Reject empty names", "bug"), nil, "fix: fix:Reject empty names"},
		{"invalid scope is not a prefix", task("fix(log in): Reject empty names", "bug"), nil, "fix: fix(log in): Reject empty names"},
		{"empty scope is not a prefix", task("fix(): Reject empty names", "bug"), nil, "fix: fix(): Reject empty names"},
		{"type inside the title is not a prefix", task("Reject fix: empty names", "bug"), nil, "fix: Reject fix: empty names"},
		{"only the first prefix is taken", task("fix: feat: Reject empty names", "bug"), nil, "fix: feat: Reject empty names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, commitHeader(defaults, tt.task, tt.plan))
		})
	}
	t.Run("long title still fits", func(t *testing.T) {
		h := commitHeader(defaults, task("fix(cli)!: "+strings.Repeat("word ", 30), "bug"), planWith("feat", "tracker", false))
		assert.LessOrEqual(t, utf8.RuneCountInString(h), maxHeader, "header %q", h)
		assert.True(t, strings.HasPrefix(h, "fix(cli)!: word word"), "header %q", h)
		assert.Equal(t, 1, strings.Count(h, ": "), "header %q", h)
	})
}

// headerOf calls commitHeader and turns a panic into a test failure with the inputs.
func headerOf(t *testing.T, cfg config.Commit, task tracker.Task, plan *loop.Plan) (h string, panicked bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("commitHeader panicked on title %q: %v", task.Title, r)
			panicked = true
		}
	}()
	return commitHeader(cfg, task, plan), false
}

func TestCommitHeaderLength(t *testing.T) {
	words := func(word string, n int) string { return strings.TrimSpace(strings.Repeat(word+" ", n)) }
	titles := map[string]string{
		"single 100-char word":      strings.Repeat("x", 100),
		"single 100-rune word":      strings.Repeat("ü", 100),
		"single 300-char word":      strings.Repeat("abc", 100),
		"many short words":          words("ab", 60),
		"many long words":           words("internationalisation", 10),
		"multibyte words":           words("größenänderung", 10),
		"cjk words":                 words("日本語のテキスト", 12),
		"emoji words":               words("🚀🔥", 40),
		"mixed":                     "Ünïcödé naïve façade — " + words("日本 ok", 20),
		"trailing periods":          words("word", 20) + "...",
		"internal newlines":         strings.Repeat("line one\nline two\r\n\tline three ", 5),
		"exactly 66 chars":          strings.Repeat("a", 66),
		"exactly 67 chars":          strings.Repeat("a", 67),
		"space right after the cut": strings.Repeat("a", 65) + " " + strings.Repeat("b", 10),
		"space right before cut":    strings.Repeat("a", 64) + " " + strings.Repeat("b", 10),
		"period at the cut":         strings.Repeat("a", 40) + ". " + words("bbbb", 10),
	}
	for n := 0; n <= 120; n += 7 {
		titles[fmt.Sprintf("%d chars of words", n)] = (strings.Repeat("word ", n/5+1))[:n]
	}
	plans := map[string]*loop.Plan{
		"no plan":                 nil,
		"feat":                    planWith("feat", "", false),
		"refactor scope breaking": planWith("refactor", "some-long/scope.name", true),
	}
	for name, title := range titles {
		for pname, plan := range plans {
			t.Run(name+"/"+pname, func(t *testing.T) {
				task := tracker.Task{ID: "norma-a1", Title: title, IssueType: "task"}
				h, panicked := headerOf(t, config.Default().Commit, task, plan)
				if panicked {
					return
				}
				assert.LessOrEqual(t, utf8.RuneCountInString(h), maxHeader, "header %q", h)
				assert.True(t, utf8.ValidString(h), "header %q is not valid UTF-8", h)
				assert.NotContains(t, h, "\n")
				assert.NotContains(t, h, "\r")
				prefix, subj, ok := strings.Cut(h, ": ")
				require.True(t, ok, "header %q has no ': '", h)
				assert.NotEmpty(t, prefix)
				full := strings.TrimRight(strings.Join(strings.Fields(title), " "), ".")
				if full == "" {
					full = "complete norma-a1"
				}
				if cut, truncated := strings.CutSuffix(subj, "…"); truncated {
					assert.True(t, strings.HasPrefix(full, cut), "truncated subject %q is not a prefix of %q", subj, full)
					assert.Greater(t, utf8.RuneCountInString(prefix)+2+utf8.RuneCountInString(full), maxHeader,
						"subject %q was cut although %q fits", subj, full)
				} else {
					assert.Equal(t, full, subj)
					assert.False(t, strings.HasSuffix(subj, "."), "subject %q ends with a period", subj)
				}
			})
		}
	}
}

// A scope is only checked against a pattern, so a Plan agent can propose one long enough to
// leave no room for the subject.
func TestCommitHeaderLongScope(t *testing.T) {
	for _, n := range []int{40, 62, 63, 64, 70, 100} {
		t.Run(fmt.Sprintf("scope of %d chars", n), func(t *testing.T) {
			scope := strings.Repeat("s", n)
			task := tracker.Task{ID: "norma-a1", Title: "Fix the login redirect in the session handler", IssueType: "bug"}
			var h string
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				h = commitHeader(config.Default().Commit, task, planWith("fix", scope, true))
			}()
			require.Nil(t, panicked)
			assert.LessOrEqual(t, utf8.RuneCountInString(h), maxHeader, "header %q", h)
			assert.True(t, strings.HasPrefix(h, "fix"), "header %q", h)
		})
	}
}

// subject cuts at a word boundary only when that keeps more than half the width; the same
// title written in multibyte letters must be cut the same way.
func TestSubjectCutIsInRunes(t *testing.T) {
	tests := []struct {
		name, ascii, multibyte string
	}{
		{"word boundary before the middle", strings.Repeat("a", 20) + " " + strings.Repeat("o", 80),
			strings.Repeat("ä", 20) + " " + strings.Repeat("ö", 80)},
		{"word boundary after the middle", strings.Repeat("a", 40) + " " + strings.Repeat("o", 80),
			strings.Repeat("ä", 40) + " " + strings.Repeat("ö", 80)},
		{"cjk", strings.Repeat("a", 12) + " " + strings.Repeat("o", 80),
			strings.Repeat("語", 12) + " " + strings.Repeat("本", 80)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := subject(tracker.Task{Title: tt.ascii}, 66)
			m := subject(tracker.Task{Title: tt.multibyte}, 66)
			require.LessOrEqual(t, utf8.RuneCountInString(a), 66)
			require.LessOrEqual(t, utf8.RuneCountInString(m), 66)
			assert.Equal(t, utf8.RuneCountInString(a), utf8.RuneCountInString(m), "%q vs %q", a, m)
		})
	}
}

// parseTrailers runs the real `git interpret-trailers --parse` on msg.
func parseTrailers(t *testing.T, g git.Runner, msg string) []string {
	t.Helper()
	out, err := g.Input(context.Background(), strings.NewReader(msg), "interpret-trailers", "--parse")
	require.NoError(t, err)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func TestCommitMessage(t *testing.T) {
	repo := gittest.NewRepo(t)
	task := tracker.Task{ID: "norma-k3x9", Title: "Fix the login redirect", IssueType: "bug"}
	plan := &loop.Plan{
		Goal: "Users land on the page they asked for after logging in.",
		AcceptanceCriteria: loop.PlanCriteria{Effective: []loop.EffectiveCriterion{
			{ID: "AC-1", Text: "redirect keeps the path"},
			{ID: "AC-2", Text: "`go test ./login/...` succeeds"},
		}},
	}
	check := func(status string, results ...loop.AcceptanceResult) *loop.Check {
		return &loop.Check{AcceptanceResults: results, Verdict: loop.Verdict{Status: status}}
	}
	pass := check("PASS", loop.AcceptanceResult{ACID: "AC-1", Result: "PASS"}, loop.AcceptanceResult{ACID: "AC-2", Result: "PASS"})
	norma := func(step, verdict string) []string {
		return []string{"Norma-Task: norma-k3x9", "Norma-Run: 20260101-120000-ab12", "Norma-Step: " + step, "Norma-Verdict: " + verdict}
	}
	coAuthor := config.Commit{TypeMap: config.Default().Commit.TypeMap, CoAuthor: "Norma Agent <agent@example.com>"}
	trickyPlan := &loop.Plan{
		Goal: "Closes: #12. Signed-off-by: nobody <x@example.com>",
		AcceptanceCriteria: loop.PlanCriteria{Effective: []loop.EffectiveCriterion{
			{ID: "AC-1", Text: "Fixes: #1"},
			{ID: "AC-2", Text: "Reviewed-by: someone"},
		}},
	}
	longPlan := &loop.Plan{
		Goal: strings.Repeat("a long goal sentence ", 12),
		AcceptanceCriteria: loop.PlanCriteria{Effective: []loop.EffectiveCriterion{
			{ID: "AC-1", Text: strings.Repeat("criterion words ", 15)},
		}},
	}

	tests := []struct {
		name     string
		cfg      config.Commit
		plan     *loop.Plan
		check    *loop.Check
		step     int
		trailers []string
		goal     bool
		results  []string
	}{
		{"no plan, no check", config.Default().Commit, nil, nil, 3, norma("003", "PASS"), false, nil},
		{"goal and results", config.Default().Commit, plan, pass, 12, norma("012", "PASS"), true,
			[]string{"- AC-1 PASS: redirect keeps the path", "- AC-2 PASS: `go test ./login/...` succeeds"}},
		{"plan without goal", config.Default().Commit, &loop.Plan{}, pass, 1, norma("001", "PASS"), false,
			[]string{"- AC-1 PASS:", "- AC-2 PASS:"}},
		{"check without results", config.Default().Commit, plan, check("PASS"), 4, norma("004", "PASS"), true, nil},
		{"failing verdict", config.Default().Commit, plan,
			check("FAIL", loop.AcceptanceResult{ACID: "AC-1", Result: "PASS"}, loop.AcceptanceResult{ACID: "AC-2", Result: "FAIL"}),
			7, norma("007", "FAIL"), true, []string{"- AC-1 PASS: redirect keeps the path", "- AC-2 FAIL: `go test ./login/...` succeeds"}},
		{"step over 999", config.Default().Commit, nil, nil, 1234, norma("1234", "PASS"), false, nil},
		{"co-author", coAuthor, plan, pass, 5,
			append(norma("005", "PASS"), "Co-authored-by: Norma Agent <agent@example.com>"), true,
			[]string{"- AC-1 PASS: redirect keeps the path", "- AC-2 PASS: `go test ./login/...` succeeds"}},
		{"trailer-like goal and criteria stay in the body", config.Default().Commit, trickyPlan, pass, 2, norma("002", "PASS"), true,
			[]string{"- AC-1 PASS: Fixes: #1", "- AC-2 PASS: Reviewed-by: someone"}},
		{"long goal and criterion wrap", coAuthor, longPlan, check("PASS", loop.AcceptanceResult{ACID: "AC-1", Result: "PASS"}), 9,
			append(norma("009", "PASS"), "Co-authored-by: Norma Agent <agent@example.com>"), true, []string{"- AC-1 PASS: criterion words"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := Message(tt.cfg, task, tt.plan, tt.check, "20260101-120000-ab12", tt.step)
			assert.Equal(t, tt.trailers, parseTrailers(t, repo.Git, msg), "message:\n%s", msg)

			lines := strings.Split(strings.TrimSuffix(msg, "\n"), "\n")
			require.GreaterOrEqual(t, len(lines), 3)
			assert.Equal(t, commitHeader(tt.cfg, task, tt.plan), lines[0])
			assert.Empty(t, lines[1], "blank line after the header")
			for i, l := range lines {
				assert.LessOrEqual(t, utf8.RuneCountInString(l), maxHeader, "line %d %q", i, l)
			}

			var goal []string
			var items []string
			for _, l := range lines {
				if strings.HasPrefix(l, "Goal: ") {
					goal = append(goal, l)
				}
				if strings.HasPrefix(l, "- ") {
					items = append(items, l)
				}
			}
			if tt.goal {
				require.Len(t, goal, 1, "message:\n%s", msg)
				body := strings.Join(strings.Fields(strings.SplitN(msg, "\n\n", 3)[1]), " ")
				assert.Equal(t, strings.Join(strings.Fields("Goal: "+tt.plan.Goal), " "), body, "the goal paragraph")
			} else {
				assert.Empty(t, goal)
			}
			require.Len(t, items, len(tt.results), "one line per acceptance result:\n%s", msg)
			for i, want := range tt.results {
				assert.True(t, strings.HasPrefix(items[i], want), "item %q, want prefix %q", items[i], want)
			}
			if len(tt.results) > 0 {
				assert.Contains(t, msg, "\nAcceptance:\n")
			} else {
				assert.NotContains(t, msg, "Acceptance:")
			}
		})
	}
}

// The message makes a real commit whose trailers git reads back by key.
func TestCommitMessageInRealCommit(t *testing.T) {
	repo := gittest.NewRepo(t)
	cfg := config.Default().Commit
	cfg.CoAuthor = "Norma Agent <agent@example.com>"
	task := tracker.Task{ID: "norma-k3x9", Title: "Fix the login redirect", IssueType: "bug"}
	msg := Message(cfg, task, &loop.Plan{Goal: "g"}, nil, "run-1", 8)
	ctx := context.Background()
	commit, err := repo.Git.Input(ctx, strings.NewReader(msg), "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-F", "-")
	require.NoError(t, err)
	tests := []struct{ key, want string }{
		{"Norma-Task", "norma-k3x9"},
		{"Norma-Run", "run-1"},
		{"Norma-Step", "008"},
		{"Norma-Verdict", "PASS"},
		{"Co-authored-by", "Norma Agent <agent@example.com>"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got := repo.Must("log", "-1", "--format=%(trailers:key="+tt.key+",valueonly)", commit)
			assert.Equal(t, tt.want, strings.TrimSpace(got))
		})
	}
	assert.Equal(t, "fix: Fix the login redirect", repo.Must("log", "-1", "--format=%s", commit))
}

func TestWrapTextKeepsCommandsWhole(t *testing.T) {
	cmd := "`go test -run 'TestLogin|TestRedirect'   -count=1 ./login/... ./session/...`"
	got := wrapText("- AC-1 PASS: "+cmd+" succeeds on the patched tree", 40)
	assert.Contains(t, got, cmd, "the command, spaces and all, on one line:\n%s", got)
	for _, l := range strings.Split(got, "\n") {
		if !strings.Contains(l, "`") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), 40, "line %q", l)
		}
	}
	assert.Equal(t, "- a b\n  c d", wrapText("- a  b c d", 5), "outside backticks, whitespace is still folded")
	assert.Equal(t, "tidy `x Norma-Run: r-1 `", wrapText("tidy `x\nNorma-Run: r-1\n`", 72), "a line break in backticks makes no line of its own")
}
