package main

// The benchmarks of issue 8: git-norma's own cost as a ratio against a plain-git floor measured
// in the same run on the same machine. They drive the installed-style binary (built here with
// CGO_ENABLED=0 -trimpath, like install.sh) on real repositories. Run them with:
//
//	go test -run '^$' -bench . -benchtime 5x ./cmd/git-norma
//
// Each reports "x-floor" (the ratio; lower is better) next to the medians it was computed from.
// docs/performance.md records the figures and the targets.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-norma/git-norma/loop/sandbox"
)

var bench struct {
	once sync.Once
	dir  string // holds git-norma and norma-example-agent
	err  error
}

// benchBinDir builds git-norma as install.sh does, once per test process (removed when the
// process is done, see cleaningM).
func benchBinDir(b *testing.B) string {
	b.Helper()
	bench.once.Do(func() {
		bench.dir, bench.err = os.MkdirTemp("", "norma-bench-*")
		if bench.err != nil {
			return
		}
		for _, build := range [][]string{
			{"-o", filepath.Join(bench.dir, "git-norma"), "."},
			{"-o", filepath.Join(bench.dir, "norma-example-agent"), "../../examples/do-agent"},
		} {
			cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, build...)...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				bench.err = fmt.Errorf("go build %v: %v\n%s", build, err, out)
				return
			}
		}
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.dir
}

func removeBenchBinDir() {
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
}

// benchRepo is a git repository with git-norma initialised and the built binaries on PATH.
type benchRepo struct {
	b   *testing.B
	dir string
	env []string
}

func newBenchRepo(b *testing.B, config string) *benchRepo {
	b.Helper()
	home := b.TempDir()
	gitconfig := "[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		b.Fatal(err)
	}
	r := &benchRepo{b: b, dir: filepath.Join(home, "repo"), env: append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"PATH="+benchBinDir(b)+string(os.PathListSeparator)+os.Getenv("PATH"))}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	r.must("git", "init", "-q", "-b", "main")
	r.must("git", "commit", "-q", "--allow-empty", "-m", "initial commit")
	r.must("git-norma", "init")
	if config != "" {
		r.write(".norma/config.json", config)
	}
	return r
}

func (r *benchRepo) write(rel, content string) {
	r.b.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		r.b.Fatal(err)
	}
}

func (r *benchRepo) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	return cmd
}

// must runs a command that has to succeed and returns its trimmed stdout.
func (r *benchRepo) must(name string, args ...string) string {
	r.b.Helper()
	out, err := r.cmd(name, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		r.b.Fatalf("%s %v: %v\n%s", name, args, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// timed runs a command that has to succeed and returns how long it took.
func (r *benchRepo) timed(name string, args ...string) time.Duration {
	r.b.Helper()
	start := time.Now()
	r.must(name, args...)
	return time.Since(start)
}

// addTask adds a task to the embedded backlog and returns its id.
func (r *benchRepo) addTask(title, artifact, verify string) string {
	r.b.Helper()
	return r.must("git-norma", "task", "add", title, "-d", "Artifact: "+artifact, "--verify", verify)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// reportRatio reports the medians and their ratio, the figure the targets are about.
func reportRatio(b *testing.B, norma, floor []time.Duration) float64 {
	b.Helper()
	n, f := median(norma), median(floor)
	ratio := float64(n) / float64(f)
	b.ReportMetric(float64(n.Microseconds())/1000, "ms-norma")
	b.ReportMetric(float64(f.Microseconds())/1000, "ms-floor")
	b.ReportMetric(ratio, "x-floor")
	b.ReportMetric(0, "ns/op") // the medians are the figures, not b's mean
	return ratio
}

// doAgent is an instant exec Do agent that counts its runs in count.txt.
const doAgent = `#!/bin/sh
cat >/dev/null
n=$(cat count.txt 2>/dev/null || echo 0)
echo $((n+1)) > count.txt
echo '{"status":"ok","stop_reason":"none","summary":{"text":"done"},"do":{"execution":{"executed_step_ids":["DO-1"],"skipped_step_ids":[],"commands":[]},"blockers":[]}}'
`

// BenchmarkIteration is benchmark 1: one more PDCA iteration (built-in Plan, Check and Act, an
// instant exec Do agent), measured as the difference between a run that needs three
// iterations and one that needs one, halved — against a shell script doing what an iteration
// inherently costs: the same Do agent and Verify command, then git add, commit, notes add and
// update-ref.
func BenchmarkIteration(b *testing.B) {
	r := newBenchRepo(b, `{"agents": {"do": {"type": "exec", "cmd": ["./agents/do.sh"]}},
		"budgets": {"max_iterations": 10, "max_failed_checks": 10, "max_same_failures": 0}, "retention": {"keep_last": 0, "keep_days": 0}}`)
	r.write("agents/do.sh", doAgent)
	r.write("floor.sh", `set -e
sh agents/do.sh </dev/null >/dev/null
sh -c 'test "$(cat count.txt)" -ge 0'
git add -A
git commit -q --no-verify -m step
git notes --ref norma add -m '{"ts":"x"}' HEAD
git update-ref refs/heads/floor HEAD
`)
	r.must("git", "add", "agents", "floor.sh")
	r.must("git", "commit", "-q", "-m", "agents")
	// The floor works in a worktree of its own, so main (where tasks fork) stays as it is.
	floorDir := filepath.Join(b.TempDir(), "floor")
	r.must("git", "worktree", "add", "-q", "-b", "floor", floorDir, "main")
	fr := &benchRepo{b: b, dir: floorDir, env: r.env}
	var norma, floor []time.Duration
	for i := 0; i < b.N; i++ {
		one := r.addTask(fmt.Sprintf("one %d", i), "count.txt", `test "$(cat count.txt)" -ge 1`)
		three := r.addTask(fmt.Sprintf("three %d", i), "count.txt", `test "$(cat count.txt)" -ge 3`)
		t1 := r.timed("git-norma", "-q", "run", one, "--no-land")
		t3 := r.timed("git-norma", "-q", "run", three, "--no-land")
		norma = append(norma, (t3-t1)/2)
		floor = append(floor, fr.timed("sh", "floor.sh"))
	}
	if out := r.must("git-norma", "status", "--json", "-n", "1"); !strings.Contains(out, `"iteration": 3`) {
		b.Fatalf("the three-iteration run did not take three iterations:\n%s", out)
	}
	reportRatio(b, norma, floor)
}

// BenchmarkRunAndLand20kFiles is benchmark 2: a whole run that lands a 1-file change on a
// 20,000-file repository, against git worktree add, a commit in it, merge-tree, commit-tree and
// update-ref — the git work of getting one change onto the target through a worktree.
func BenchmarkRunAndLand20kFiles(b *testing.B) {
	r := newBenchRepo(b, `{"target_branch": "main", "agents": {"do": {"type": "exec", "cmd": ["norma-example-agent"]}},
		"retention": {"keep_last": 0, "keep_days": 0}}`)
	for i := 0; i < 20000; i++ {
		r.write(fmt.Sprintf("src/d%03d/f%05d.txt", i/100, i), fmt.Sprintf("file %d\n", i))
	}
	r.must("git", "add", "-A")
	r.must("git", "commit", "-q", "-m", "20,000 files")
	r.write("floor.sh", `set -e
git worktree add -q -b "floor/$1" "$2" main
echo change > "$2/floor-$1.txt"
git -C "$2" add -A
git -C "$2" commit -q --no-verify -m change
tree=$(git merge-tree --write-tree main "floor/$1")
commit=$(git commit-tree "$tree" -p main -m "land $1")
git update-ref refs/heads/main "$commit"
`)
	r.must("git", "checkout", "-q", "--detach") // main is not checked out: landing is ref-only
	var norma, floor []time.Duration
	for i := 0; i < b.N; i++ {
		task := r.addTask(fmt.Sprintf("change %d", i), fmt.Sprintf("change-%d.txt", i), fmt.Sprintf("test -f change-%d.txt", i))
		norma = append(norma, r.timed("git-norma", "-q", "run", task))
		wt := filepath.Join(b.TempDir(), "wt")
		floor = append(floor, r.timed("sh", "floor.sh", fmt.Sprint(i), wt))
		r.must("git", "worktree", "remove", "--force", wt)
	}
	if log := r.must("git", "log", "--format=%s", "main"); !strings.Contains(log, "change 0") {
		b.Fatalf("the runs did not land:\n%s", log)
	}
	reportRatio(b, norma, floor)
}

// BenchmarkStatusLargeHistory is benchmark 3: status and status --json with 10,000 runs,
// 40,000 steps and 100,000 events in the database, against the same commands on an empty one.
func BenchmarkStatusLargeHistory(b *testing.B) {
	empty := newBenchRepo(b, "")
	large := newBenchRepo(b, "")
	if err := fillHistory(filepath.Join(large.dir, ".norma", "norma.db"), 10000, 4, 10); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		b.Run(strings.Join(args, " "), func(b *testing.B) {
			var norma, floor []time.Duration
			for i := 0; i < b.N; i++ {
				norma = append(norma, large.timed("git-norma", args...))
				floor = append(floor, empty.timed("git-norma", args...))
			}
			reportRatio(b, norma, floor)
		})
	}
}

// BenchmarkStartup is benchmark 4: `git norma version` and `git norma status` on an empty
// repository, against `git rev-parse HEAD`.
func BenchmarkStartup(b *testing.B) {
	r := newBenchRepo(b, "")
	for _, args := range [][]string{{"version"}, {"status"}} {
		b.Run(args[0], func(b *testing.B) {
			var norma, floor []time.Duration
			for i := 0; i < b.N*10; i++ {
				norma = append(norma, r.timed("git-norma", args...))
				floor = append(floor, r.timed("git", "rev-parse", "HEAD"))
			}
			reportRatio(b, norma, floor)
		})
	}
}

// BenchmarkMemory1GiBOutput is benchmark 5: the peak RSS of `git norma run` while its Do agent
// writes 1 GiB to stdout (the agent's output goes to the step log, never through memory; the
// run then fails the step as too large). Reported in MB; the target is 50.
func BenchmarkMemory1GiBOutput(b *testing.B) {
	r := newBenchRepo(b, `{"agents": {"do": {"type": "exec", "cmd": ["./agents/flood.sh"]}},
		"budgets": {"max_iterations": 1}, "retention": {"keep_last": 0, "keep_days": 0}}`)
	r.write("agents/flood.sh", "#!/bin/sh\ncat >/dev/null\nhead -c 1073741824 /dev/zero\n")
	r.must("git", "add", "agents")
	r.must("git", "commit", "-q", "-m", "agents")
	var peak int64
	for i := 0; i < b.N; i++ {
		task := r.addTask(fmt.Sprintf("flood %d", i), "x.txt", "test -f x.txt")
		peak = max(peak, r.peakRSS("-q", "run", task)) // the step fails: 1 GiB is not an output object
		_ = os.RemoveAll(filepath.Join(r.dir, ".norma", "runs"))
	}
	b.ReportMetric(float64(peak)/1024, "MB-peak-rss")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkParallelThroughput is benchmark 7: four independent tasks whose Do agent sleeps 5 s,
// run by `loop --parallel 4`, against one such task run alone. Target: at most 1.4x.
func BenchmarkParallelThroughput(b *testing.B) {
	r := newBenchRepo(b, `{"max_parallel": 4, "agents": {"do": {"type": "exec", "cmd": ["./agents/slow.sh"]}},
		"retention": {"keep_last": 0, "keep_days": 0}}`)
	r.write("agents/slow.sh", "#!/bin/sh\ncat >/dev/null\nsleep 5\ntouch \"done-$NORMA_TASK_ID\"\n"+
		`echo '{"status":"ok","stop_reason":"none","summary":{"text":"done"},"do":{"execution":{"executed_step_ids":["DO-1"],"skipped_step_ids":[],"commands":[]},"blockers":[]}}'`+"\n")
	r.must("git", "add", "agents")
	r.must("git", "commit", "-q", "-m", "agents")
	task := func(name string) string {
		id := r.must("git-norma", "task", "add", name, "-d", "Artifact: done file", "--verify", "true")
		return id
	}
	var norma, floor []time.Duration
	for i := 0; i < b.N; i++ {
		floor = append(floor, r.timed("git-norma", "-q", "run", task(fmt.Sprintf("alone %d", i))))
		for k := 0; k < 4; k++ {
			task(fmt.Sprintf("parallel %d.%d", i, k))
		}
		norma = append(norma, r.timed("git-norma", "-q", "loop", "--parallel", "4"))
	}
	reportRatio(b, norma, floor)
}

// BenchmarkSandboxLauncher is what the sandbox launcher adds to starting one agent or check
// command: `sh -c true` started through the run's launcher (`git-norma __sandbox-exec
// --serve`: Landlock where the kernel has it, its pid namespace where the kernel gives one,
// else the subreaper and the sweep for leftovers, the report) vs started directly. The target
// is "ms-added" ≤ 5. "ms-added-alone" is the same through a launcher of its own (RunAlone: a
// `worktree.setup` command, git with filter drivers); "ms-probe" is the cost of asking, once
// per command of git-norma's, whether a pid namespace can be had.
func BenchmarkSandboxLauncher(b *testing.B) {
	launcher := filepath.Join(benchBinDir(b), "git-norma")
	dir := b.TempDir()
	abi, _ := sandbox.ABI()
	var namespace bool
	var probes []time.Duration
	for range 9 {
		start := time.Now()
		namespace, _, _ = sandbox.Namespaces(launcher)
		probes = append(probes, time.Since(start))
	}
	policy := sandbox.Policy{Landlock: abi > 0, Writable: []string{dir}, Network: true}
	srv, err := sandbox.StartServer(launcher, dir, namespace)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	sh := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", "true")
		cmd.Dir = dir
		return cmd
	}
	direct := func() time.Duration {
		start := time.Now()
		if err := sh().Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	served := func() time.Duration {
		start := time.Now()
		if code, rep, err := srv.Run(sh(), policy, nil); err != nil || code != 0 || len(rep.Killed) > 0 {
			b.Fatalf("exit %d, %v, killed %v", code, err, rep.Killed)
		}
		return time.Since(start)
	}
	alone := func() time.Duration {
		start := time.Now()
		if err := sandbox.RunAlone(context.Background(), launcher, namespace, sh(), policy); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var norma, floor, single []time.Duration
	for i := 0; i < b.N*20; i++ {
		norma = append(norma, served())
		floor = append(floor, direct())
		single = append(single, alone())
	}
	reportRatio(b, norma, floor)
	b.ReportMetric(float64((median(norma)-median(floor)).Microseconds())/1000, "ms-added")
	b.ReportMetric(float64((median(single)-median(floor)).Microseconds())/1000, "ms-added-alone")
	b.ReportMetric(float64(median(probes).Microseconds())/1000, "ms-probe")
}
