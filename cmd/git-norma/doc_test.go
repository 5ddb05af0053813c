package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testModel is the kong model Main parses with.
func testModel(t *testing.T) *kong.Application {
	t.Helper()
	k, err := kong.New(&CLI{}, kong.Name(appName), kong.Description(appDescription))
	require.NoError(t, err)
	return k.Model
}

// testPages renders every page as roff, with the roff escapes undone, by page name.
func testPages(t *testing.T) (map[string]string, []*page) {
	t.Helper()
	pages, err := manPages(testModel(t))
	require.NoError(t, err)
	out := map[string]string{}
	unroff := strings.NewReplacer(`\-`, "-", `\fB`, "", `\fI`, "", `\fR`, "", `\&`, "", `\e`, `\`)
	for _, p := range pages {
		out[p.name] = unroff.Replace(p.roff("test"))
	}
	return out, pages
}

// TestManPagesCoverTheModel compares the pages with the kong model: every visible command has
// a page naming each of its subcommands, flags (long and short) and arguments; git-norma(1)
// names every command and the global options. Pages cannot drift from the binary.
func TestManPagesCoverTheModel(t *testing.T) {
	pages, _ := testPages(t)
	app := testModel(t)
	root := pages["git-norma"]
	for _, f := range app.Flags {
		assert.Contains(t, root, "--"+f.Name, "git-norma(1) lacks the global option --%s", f.Name)
		if f.Short != 0 {
			assert.Contains(t, root, "-"+string(f.Short)+",", "git-norma(1) lacks -%c", f.Short)
		}
	}
	for _, cmd := range visibleChildren(app.Node) {
		page, ok := pages["git-norma-"+cmd.Name]
		require.True(t, ok, "no page for git norma %s", cmd.Name)
		assert.Contains(t, page, ".TH \"GIT-NORMA-"+strings.ToUpper(cmd.Name)+"\" \"1\"")
		for _, leaf := range leaves(cmd) {
			assert.Contains(t, root, "git norma "+leaf.Path(), "git-norma(1) lacks %s", leaf.Path())
			assert.Contains(t, page, "git norma "+leaf.Path(), "git-norma-%s(1) lacks %s", cmd.Name, leaf.Path())
			for _, f := range leaf.Flags {
				if f.Hidden || f.Name == "help" {
					continue
				}
				assert.Regexp(t, regexp.MustCompile(`(^|[\s\[,])--`+regexp.QuoteMeta(f.Name)+`\b`), page, "git-norma-%s(1) lacks %s --%s", cmd.Name, leaf.Path(), f.Name)
				if f.Short != 0 {
					assert.Contains(t, page, "-"+string(f.Short)+", --"+f.Name, "git-norma-%s(1) lacks -%c", cmd.Name, f.Short)
				}
			}
			for _, a := range leaf.Positional {
				assert.Contains(t, page, "<"+a.Name+">", "git-norma-%s(1) lacks %s <%s>", cmd.Name, leaf.Path(), a.Name)
			}
		}
		for _, code := range []string{"128", "129", "130"} {
			assert.Contains(t, page, ".TP\n"+code+"\n", "git-norma-%s(1) lacks exit status %s", cmd.Name, code)
		}
	}
	assert.Contains(t, pages, configPage)
	assert.Len(t, pages, len(visibleChildren(app.Node))+2)
}

// TestEveryCommandHasProse: each page has hand-written prose, and no prose is left for a
// command that no longer exists.
func TestEveryCommandHasProse(t *testing.T) {
	app := testModel(t)
	want := []string{"git-norma.txt", configPage + ".txt", "json-shapes.txt"}
	for _, c := range visibleChildren(app.Node) {
		want = append(want, "git-norma-"+c.Name+".txt")
	}
	entries, err := docFS.ReadDir("doc")
	require.NoError(t, err)
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
	}
	assert.ElementsMatch(t, want, have)
	for _, name := range have {
		if name == "json-shapes.txt" {
			continue
		}
		secs, err := prose(strings.TrimSuffix(name, ".txt"))
		require.NoError(t, err)
		assert.NotNil(t, take(&secs, "DESCRIPTION"), "%s has no DESCRIPTION", name)
		if name != configPage+".txt" {
			assert.NotNil(t, take(&secs, "EXAMPLES"), "%s has no EXAMPLES", name)
		}
	}
}

// TestPagesRenderAsText: the text of `git norma help` has every page's sections and no roff.
func TestPagesRenderAsText(t *testing.T) {
	_, pages := testPages(t)
	for _, p := range pages {
		text := p.text(80)
		for _, s := range append([]string{"NAME", "SYNOPSIS"}, sectionTitles(p)...) {
			assert.Contains(t, text, "\n"+s+"\n", "%s", p.name)
		}
		assert.NotContains(t, text, `\f`, p.name)
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, "           ") { // literal blocks may be wider
				assert.LessOrEqual(t, len([]rune(line)), 80, "%s: %q", p.name, line)
			}
		}
	}
}

func sectionTitles(p *page) []string {
	var out []string
	for _, s := range p.sections {
		out = append(out, s.title)
	}
	return out
}

// pageShapes are the JSON shapes the pages show.
func pageShapes(t *testing.T) []string {
	t.Helper()
	_, pages := testPages(t)
	var out []string
	for _, p := range pages {
		out = append(out, shapesOf(p)...)
	}
	return out
}

func shapesOf(p *page) []string {
	var out []string
	for _, s := range p.sections {
		for _, b := range s.blocks {
			if b.kind == blockJSON {
				out = append(out, b.term)
			}
		}
	}
	return out
}

// jsonExempt are the commands that print no data (only progress, a document, logs, or JSON already).
var jsonExempt = []string{"pause", "resume", "notes push", "notes pull", "schema", "help", "man", "completion", "logs", "task unblock", "task accept", "config set",
	"task edit", "task close", "task reopen", "task label add", "task label remove", "task dep add", "task dep remove"}

// TestDataCommandsTakeJSON: every command that prints data has --json and documents its shape
// in a JSON OUTPUT section; the end-to-end script json_shapes.txtar checks each against it.
func TestDataCommandsTakeJSON(t *testing.T) {
	app := testModel(t)
	script, err := os.ReadFile("testdata/script/json_shapes.txtar")
	require.NoError(t, err)
	_, pages := testPages(t)
	for _, cmd := range visibleChildren(app.Node) {
		p := findPage(pages, cmd.Name)
		for _, leaf := range leaves(cmd) {
			if slices.Contains(jsonExempt, leaf.Path()) {
				continue
			}
			hasJSON := slices.ContainsFunc(leaf.Flags, func(f *kong.Flag) bool { return f.Name == "json" })
			assert.True(t, hasJSON, "git norma %s prints data but has no --json", leaf.Path())
			assert.NotEmpty(t, shapesOf(p), "%s documents no JSON shape", p.name)
			assert.Regexp(t, `(?m)^exec (sh -c ')?git norma `+regexp.QuoteMeta(leaf.Path())+`\b.*--json`, string(script),
				"json_shapes.txtar does not run git norma %s --json", leaf.Path())
		}
		for _, name := range shapesOf(p) {
			if name != "notify" && name != "usage" && name != "run-row" {
				assert.Regexp(t, `(?m)^jsonshape \S+ `+regexp.QuoteMeta(name)+`$`, string(script), "json_shapes.txtar never checks @%s", name)
			}
		}
	}
}

// TestConfigPageCoversEveryKey: gitnorma-config(5) and the README describe every key of
// gitnorma.Config, and nothing else.
func TestConfigPageCoversEveryKey(t *testing.T) {
	keys := configKeys()
	assert.Contains(t, keys, "agents.<role>.timeout")
	assert.Contains(t, keys, "budgets.max_cost_usd")
	documented, err := configKeyDocs()
	require.NoError(t, err)
	assert.ElementsMatch(t, keys, documented)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, k := range keys {
		assert.True(t, strings.Contains(string(readme), "`"+k+"`"), "the README's configuration table lacks %s", k)
	}
	defaults := configDefaults()
	assert.Equal(t, "`5`", defaults["budgets.max_iterations"])
	assert.Equal(t, "plan `\"builtin\"`, do `\"exec\"`, check `\"builtin\"`, act `\"builtin\"`", defaults["agents.<role>.type"])
}

// TestCompletionKindsNameTheModel: every argument or flag completion knows refers to the model.
func TestCompletionKindsNameTheModel(t *testing.T) {
	app := testModel(t)
	nodes := map[string]*kong.Node{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		nodes[n.Path()] = n
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(app.Node)
	for key := range completeKinds {
		i := strings.LastIndex(key, " ")
		n, ok := nodes[key[:i]]
		require.True(t, ok, "completeKinds: no command %q", key[:i])
		what := key[i+1:]
		found := slices.ContainsFunc(n.Flags, func(f *kong.Flag) bool { return "--"+f.Name == what }) ||
			slices.ContainsFunc(n.Positional, func(a *kong.Positional) bool { return "<"+a.Name+">" == what })
		assert.True(t, found, "completeKinds: %q names no flag or argument", key)
	}
}

// TestInstallShInstallsManPagesAndCompletion: install.sh uses the same command the man page
// test runs, so what the test proves is what users get.
func TestInstallShInstallsManPagesAndCompletion(t *testing.T) {
	data, err := os.ReadFile("../../install.sh")
	require.NoError(t, err)
	assert.Contains(t, string(data), `git-norma" man --install "$man_dir"`)
	assert.Contains(t, string(data), `git-norma" completion bash >`)
	assert.Contains(t, string(data), "source <(git norma completion bash)")
}

func TestFindPage(t *testing.T) {
	_, pages := testPages(t)
	for topic, want := range map[string]string{"": "git-norma", "run": "git-norma-run", "task add": "git-norma-task",
		"config": configPage, "norma-config": configPage, "git-norma-log": "git-norma-log", "git norma status": "git-norma-status"} {
		p := findPage(pages, topic)
		require.NotNil(t, p, topic)
		assert.Equal(t, want, p.name, topic)
	}
	assert.Nil(t, findPage(pages, "frobnicate"))
}

func TestParseProse(t *testing.T) {
	secs, err := parseProse("# DESCRIPTION\nOne\ntwo.\n\n    git norma run x\n\n    git norma land x\nterm::\n  its text\n  more\n## Sub\n{{json run}}\n# EXAMPLES\nx\n")
	require.NoError(t, err)
	require.Len(t, secs, 2)
	run, err := renderShape("run")
	require.NoError(t, err)
	assert.Equal(t, []block{
		{kind: blockPara, text: "One two."},
		{kind: blockLiteral, text: "git norma run x\n\ngit norma land x"},
		{kind: blockItem, term: "term", text: "its text more"},
		{kind: blockSub, text: "Sub"},
		{kind: blockJSON, term: "run", text: run},
	}, secs[0].blocks)
	_, err = parseProse("text first\n# X\n")
	assert.Error(t, err)
	_, err = parseProse("# X\n{{json nosuch}}\n")
	assert.ErrorContains(t, err, `line 2: no JSON shape "nosuch"`)
}

func TestRoffEscapes(t *testing.T) {
	assert.Equal(t, `\-\-json and \fBgit norma \-h\fR \e`, roffInline("--json and `git norma -h` \\"))
	assert.Equal(t, `\&.hidden`, roffLine(".hidden"))
}

// cmdNoEscapes fails when the last command's stdout or stderr holds an ANSI escape.
func cmdNoEscapes(ts *testscript.TestScript, neg bool, args []string) {
	for _, f := range []string{"stdout", "stderr"} {
		if i := bytes.IndexByte([]byte(ts.ReadFile(f)), 0x1b); i >= 0 {
			ts.Fatalf("%s holds an escape code at byte %d", f, i)
		}
	}
}

// configKeyDocs are the terms of the KEYS section of the config page.
func configKeyDocs() ([]string, error) {
	secs, err := prose(configPage)
	if err != nil {
		return nil, err
	}
	for _, s := range secs {
		if s.title == "KEYS" {
			var terms []string
			for _, b := range s.blocks {
				if b.kind == blockItem {
					terms = append(terms, b.term)
				}
			}
			return terms, nil
		}
	}
	return nil, fmt.Errorf("doc/%s.txt has no KEYS section", configPage)
}
