package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/git-norma/git-norma/loop/sandbox"
)

// fakeBDDir holds the fake bd that replays bd 1.0.5's recorded outputs (tracker's testdata).
var fakeBDDir, _ = filepath.Abs("../../gitnorma/tracker/testdata/bd")

// TestMain lets the test binary act as git-norma: testscript puts it on PATH under that name,
// so `exec git norma ...` in a script goes through the real git binary to our real Main.
func TestMain(m *testing.M) {
	testscript.Main(cleaningM{m}, map[string]func(){
		"git-norma": func() { os.Exit(Main(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})) },
	})
}

// cleaningM removes what the test binary built for the benchmarks once every test and
// benchmark has run (testscript.Main exits right after Run).
type cleaningM struct{ m *testing.M }

func (c cleaningM) Run() int {
	defer removeBenchBinDir()
	return c.m.Run()
}

// TestScripts runs every testdata/script/*.txtar end to end: real git, real temp repos, a real
// SQLite file, the built example agent, and scripted agents for the failure cases.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               setupScript(t),
		Condition:           scriptCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":  cmdExitCode,
			"sql":       cmdSQL,
			"runs":      cmdRuns,
			"steps":     cmdSteps,
			"events":    cmdEvents,
			"sqlexec":   cmdSQLExec,
			"jsonq":     cmdJSONQ,
			"newrepo":   cmdNewRepo,
			"capture":   cmdCapture,
			"jsonshape": cmdJSONShape,
			"noesc":     cmdNoEscapes,
			"tmpfs":     cmdTmpfs,
			"running":   cmdRunning,
		},
	})
}

// gitBashCompletion is where Debian and most distributions install git's bash completion.
const gitBashCompletion = "/usr/share/bash-completion/completions/git"

// scriptCondition adds [gitbashcompletion]: git's own bash completion script is installed, and
// [tmpfs]: this process may mount a tmpfs (a small disk to fill up; root on Linux), and
// [landlock]: the kernel can confine agents, and [pidns]: it gives the sandbox launcher a pid
// namespace.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "gitbashcompletion":
		_, err := os.Stat(gitBashCompletion)
		return err == nil, nil
	case "tmpfs":
		return canMountTmpfs(), nil
	case "landlock":
		abi, _ := sandbox.ABI()
		return abi > 0, nil
	case "pidns":
		return hasPIDNamespace(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// hasPIDNamespace asks git-norma's launcher (this test binary, under the name testscript gives
// git-norma) whether it runs in a pid namespace here.
var hasPIDNamespace = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "norma-pidns-*")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	launcher := filepath.Join(dir, "git-norma")
	if os.Symlink(os.Args[0], launcher) != nil {
		return false
	}
	ok, _, _ := sandbox.Namespaces(launcher)
	return ok
})

var canMountTmpfs = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "norma-tmpfs-*")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).Run() != nil {
		return false
	}
	return exec.Command("umount", dir).Run() == nil
})

// cmdTmpfs mounts a tmpfs of the given size at DIR, unmounted when the script ends:
// `tmpfs disk 4m` (guard it with [tmpfs]).
func cmdTmpfs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tmpfs DIR SIZE")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[1]+",mode=0755", "tmpfs", dir).CombinedOutput()
	if err != nil {
		ts.Fatalf("mount a tmpfs at %s: %v\n%s", dir, err, out)
	}
	ts.Defer(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func setupScript(t *testing.T) func(env *testscript.Env) error {
	dir := buildExampleAgent(t)
	return func(env *testscript.Env) error {
		home := env.WorkDir
		env.Setenv("HOME", home)
		env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
		env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
		env.Setenv("AGENT_DIR", dir)
		env.Setenv("FAKE_BD_DIR", fakeBDDir)
		env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
		gitconfig := "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
		return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644)
	}
}

// buildExampleAgent builds examples/do-agent and the stateful fake bd (testdata/bdstate, as
// bdstate: a script that wants it copies it to bd) for one TestScripts run (go build's cache
// makes a second one, under -count, cheap); the directory goes with the test.
func buildExampleAgent(t *testing.T) string {
	dir := t.TempDir()
	for name, pkg := range map[string]string{"norma-example-agent": "../../examples/do-agent", "bdstate": "./testdata/bdstate"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}
	return dir
}

// cmdExitCode runs a command and checks its exit code: `exitcode 2 git norma run x`.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

// cmdSQL prints the rows of a query, one per line, columns separated by '|':
// `sql .norma/norma.db 'select version from schema_migrations'`. Only for what is about the
// database itself (its schema, a row an attacker forged); what git-norma recorded is read
// through status --json (runs, steps, events in script_runs_test.go).
func cmdSQL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sql DB QUERY")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?mode=ro")
	ts.Check(err)
	defer db.Close()
	rows, err := db.Query(args[1])
	ts.Check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	ts.Check(err)
	var out strings.Builder
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		ts.Check(rows.Scan(ptrs...))
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
		}
		out.WriteString(strings.Join(parts, "|") + "\n")
	}
	ts.Check(rows.Err())
	fmt.Fprint(ts.Stdout(), out.String())
}

// cmdJSONQ prints the value at a dotted path of a JSON file (array indexes as numbers):
// `jsonq out.json check.verdict.status`. Strings print raw, anything else as JSON.
func cmdJSONQ(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonq FILE PATH")
	}
	var v any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &v))
	for _, key := range strings.Split(args[1], ".") {
		switch node := v.(type) {
		case map[string]any:
			v = node[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(node) {
				ts.Fatalf("no index %s in array of %d", key, len(node))
			}
			v = node[i]
		default:
			ts.Fatalf("cannot descend into %v with %q", v, key)
		}
	}
	if s, ok := v.(string); ok {
		fmt.Fprintln(ts.Stdout(), s)
		return
	}
	data, _ := json.Marshal(v)
	fmt.Fprintln(ts.Stdout(), string(data))
}

// cmdNewRepo turns the current directory into a repository with one commit of its files; its
// arguments go to git init (newrepo --object-format=sha256).
func cmdNewRepo(ts *testscript.TestScript, neg bool, args []string) {
	for _, argv := range [][]string{append([]string{"init", "-q", "-b", "main"}, args...), {"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", "initial commit"}} {
		ts.Check(ts.Exec("git", argv...))
	}
}

// cmdRunning prints "running <pid> <argv>" for every process alive (zombies are not) whose
// working directory is DIR or inside it: `running .norma/runs` names what a run's agents left
// running. Processes are found by where they work, not by a pid they wrote down: in the
// sandbox's pid namespace an agent's $$ is not its pid on the machine.
func cmdRunning(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: running DIR")
	}
	dir, err := filepath.EvalSymlinks(ts.MkAbs(args[0]))
	ts.Check(err)
	_ = ts.Stdout()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(p + "/cwd")
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		argv, err := os.ReadFile(p + "/cmdline")
		if err != nil || len(argv) == 0 { // a zombie has none
			continue
		}
		fmt.Fprintf(ts.Stdout(), "running %s %s\n", filepath.Base(p), strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " "))
	}
}

// cmdCapture stores the previous command's trimmed stdout in an environment variable:
// `exec git norma task add X` then `capture TASK`.
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: capture VAR")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// cmdSQLExec runs a statement against a database file (to build broken or future databases):
// `sqlexec .norma/norma.db 'insert into schema_migrations ...'`.
func cmdSQLExec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sqlexec DB STATEMENT")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(args[1])
	ts.Check(err)
}
