package main

// The scale-out test of issue 20: several workers, each `git norma loop --worker
// --exit-when-idle --remote origin` in its own clone, share one backlog and one bare remote;
// one of them is killed right after a claim. TestScaleOut's backlog is testdata/bdstate, a fake
// bd that keeps state (one JSON file under an flock) and speaks bd 1.0.5's recorded formats:
// its claim is a compare-and-swap, its --metadata merges keys. TestScaleOutDolt's is bd 1.0.5
// itself, in server mode on a dolt sql-server. Both opt-in (about 40 s each: they wait for a
// lease to run out); README "Development" says how to run them.

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaleAgent is a Do agent that takes a moment (the agent dominates an iteration) and writes
// one file named after its task.
const scaleAgent = `#!/bin/sh
input=$(cat)
id=$(printf '%s' "$input" | grep -o '"task_id": *"[^"]*"' | head -1 | sed 's/.*"\([^"]*\)"$/\1/')
sleep "${SCALE_AGENT_SLEEP:-0.3}"
echo "$id" > "$id.txt"
echo '{"status":"ok","stop_reason":"none","summary":{"text":"wrote the file"},"do":{"execution":{"executed_step_ids":["DO-1"],"skipped_step_ids":[],"commands":[]},"blockers":[]}}'
`

// scaleFarm is a bare remote, a backlog, and the clones the workers run in.
type scaleFarm struct {
	t       testing.TB
	dir     string
	bin     string
	remote  string
	env     []string
	backlog scaleBacklog
}

// scaleBacklog is the backlog the workers share.
type scaleBacklog interface {
	// seed makes dir (a git repository) a bd workspace, committed, holding the tasks.
	seed(f *scaleFarm, dir string, ids []string)
	// state is each task's status and how often it was closed.
	state(f *scaleFarm) (status map[string]string, closes map[string]int)
	// lease is how long the claim of a worker that died holds: worker.lease, or the lease bd
	// keeps itself (bd from 1.3).
	lease(f *scaleFarm) time.Duration
}

// scaleLease is the farm's worker.lease.
const scaleLease = 3 * time.Second

func scaleTaskIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("norma-t%02d", i+1)
	}
	return ids
}

// scaleTaskDescription asks for the file the agent writes, and checks it is there.
func scaleTaskDescription(id string) string {
	return fmt.Sprintf("Objective: write %s.txt\nArtifact: %s.txt\nVerify: test -f %s.txt", id, id, id)
}

// newScaleFarm builds git-norma into a bin directory put first on PATH (with the fake bd
// unless backlog is a real one), then seeds the remote with a repository whose backlog holds
// tasks tasks.
func newScaleFarm(t testing.TB, tasks int, backlog scaleBacklog) *scaleFarm {
	bin := t.TempDir()
	builds := [][]string{{"-o", filepath.Join(bin, "git-norma"), "."}}
	if _, fake := backlog.(*fakeBacklog); fake {
		builds = append(builds, []string{"-o", filepath.Join(bin, "bd"), "./testdata/bdstate"})
	}
	for _, b := range builds {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Scale\n\temail = scale@example.com\n[init]\n\tdefaultBranch = main\n[beads]\n\trole = maintainer\n"), 0o644))
	f := &scaleFarm{t: t, dir: dir, bin: bin, remote: filepath.Join(dir, "remote.git"), backlog: backlog}
	f.env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GIT_NORMA_SANDBOX=off", "NO_COLOR=1")
	if d, ok := backlog.(*doltBacklog); ok {
		d.start(f)
	}

	agent := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(agent, []byte(scaleAgent), 0o755))
	seed := filepath.Join(dir, "seed")
	f.must("", "git", "init", "-q", "--bare", f.remote)
	f.must("", "git", "init", "-q", seed)
	backlog.seed(f, seed, scaleTaskIDs(tasks))
	f.must(seed, "git-norma", "init")
	config := fmt.Sprintf(`{"tracker": "beads", "remote": "origin", "agents": {"do": {"type": "exec", "cmd": [%q]}}, "worker": {"lease": %q}}`, agent, scaleLease.String())
	require.NoError(t, os.WriteFile(filepath.Join(seed, ".norma", "config.json"), []byte(config), 0o644))
	f.must(seed, "git", "add", "-A")
	f.must(seed, "git", "commit", "-q", "-m", "initial commit")
	f.must(seed, "git", "push", "-q", f.remote, "main")
	return f
}

// fakeBacklog is testdata/bdstate's state file.
type fakeBacklog struct{ file string }

func (b *fakeBacklog) seed(f *scaleFarm, dir string, ids []string) {
	b.file = filepath.Join(f.dir, "backlog.json")
	f.env = append(f.env, "BDSTATE_FILE="+b.file)
	var issues []map[string]any
	for _, id := range ids {
		issues = append(issues, map[string]any{"id": id, "title": "Task " + id, "status": "open", "priority": 2, "issue_type": "task",
			"description": scaleTaskDescription(id), "created_at": "2026-11-25T00:00:00Z", "updated_at": "2026-11-25T00:00:00Z"})
	}
	data, err := json.Marshal(map[string]any{"issues": issues})
	require.NoError(f.t, err)
	require.NoError(f.t, os.WriteFile(b.file, data, 0o644))
	require.NoError(f.t, os.MkdirAll(filepath.Join(dir, ".beads"), 0o755))
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, ".beads", "metadata.json"), []byte(`{"backend":"dolt","dolt_mode":"server","dolt_database":"norma"}`+"\n"), 0o644))
}

func (b *fakeBacklog) lease(*scaleFarm) time.Duration { return scaleLease }

func (b *fakeBacklog) state(f *scaleFarm) (map[string]string, map[string]int) {
	data, err := os.ReadFile(b.file)
	require.NoError(f.t, err)
	var st struct {
		Issues []struct{ ID, Status string } `json:"issues"`
		Closes map[string]int                `json:"closes"`
	}
	require.NoError(f.t, json.Unmarshal(data, &st))
	status := map[string]string{}
	for _, is := range st.Issues {
		status[is.ID] = is.Status
	}
	return status, st.Closes
}

// doltBacklog is a real bd (server mode) on a dolt sql-server of its own, on 127.0.0.1 with a
// temporary data directory: the set-up README "Many machines" describes.
type doltBacklog struct{ port string }

// start runs the dolt sql-server until the test ends.
func (b *doltBacklog) start(f *scaleFarm) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(f.t, err)
	_, b.port, _ = net.SplitHostPort(l.Addr().String())
	l.Close()
	data := filepath.Join(f.dir, "dolt-data")
	require.NoError(f.t, os.MkdirAll(data, 0o755))
	f.must("", "dolt", "config", "--global", "--add", "user.name", "Scale")
	f.must("", "dolt", "config", "--global", "--add", "user.email", "scale@example.com")
	server := exec.Command("dolt", "sql-server", "--host", "127.0.0.1", "--port", b.port)
	server.Dir, server.Env = data, f.env
	log, err := os.Create(filepath.Join(f.dir, "dolt-server.log"))
	require.NoError(f.t, err)
	server.Stdout, server.Stderr = log, log
	require.NoError(f.t, server.Start())
	f.t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	f.env = append(f.env, "BEADS_DOLT_AUTO_START=0", "BEADS_DOLT_SERVER_HOST=127.0.0.1", "BEADS_DOLT_SERVER_PORT="+b.port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+b.port); err == nil {
			c.Close()
			return
		}
		require.True(f.t, time.Now().Before(deadline), "the dolt sql-server did not start: see %s", log.Name())
	}
}

func (b *doltBacklog) seed(f *scaleFarm, dir string, ids []string) {
	f.must(dir, "bd", "init", "--server", "--external", "--server-host", "127.0.0.1", "--server-port", b.port,
		"--prefix", "norma", "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet")
	for _, id := range ids {
		f.must(dir, "bd", "create", "--id", id, "--title", "Task "+id, "--description", scaleTaskDescription(id), "--json")
	}
}

// lease: bd from 1.3 leases claims itself, for 5 minutes (it has a heartbeat command) from
// the moment its claim went through — a process start after the test's clock started, and
// in whole seconds: a few more are allowed.
func (b *doltBacklog) lease(f *scaleFarm) time.Duration {
	cmd := exec.Command("bd", "heartbeat", "--help")
	cmd.Env = f.env
	if cmd.Run() == nil {
		return 5*time.Minute + 5*time.Second
	}
	return scaleLease
}

func (b *doltBacklog) state(f *scaleFarm) (map[string]string, map[string]int) {
	var issues []struct{ ID, Status string }
	require.NoError(f.t, json.Unmarshal([]byte(f.must(filepath.Join(f.dir, "seed"), "bd", "list", "--all", "--limit", "0", "--json")), &issues))
	status := map[string]string{}
	for _, is := range issues {
		status[is.ID] = is.Status
	}
	var rows []struct {
		IssueID string `json:"issue_id"`
		N       int    `json:"n"`
	}
	out := f.must(filepath.Join(f.dir, "seed"), "bd", "sql", "--json", "select issue_id, count(*) as n from events where event_type = 'closed' group by issue_id")
	require.NoError(f.t, json.Unmarshal([]byte(out), &rows))
	closes := map[string]int{}
	for _, r := range rows {
		closes[r.IssueID] = r.N
	}
	return status, closes
}

// must runs a command that has to succeed, in dir, and returns its stdout.
func (f *scaleFarm) must(dir, name string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, f.env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		f.t.Fatalf("%s %v in %s: %v\n%s", name, args, dir, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// clone is a worker's clone of the remote, git-norma initialised in it.
func (f *scaleFarm) clone(name string) string {
	dir := filepath.Join(f.dir, name)
	f.must("", "git", "clone", "-q", f.remote, dir)
	f.must(dir, "git-norma", "init")
	return dir
}

// worker starts `git norma loop --worker --exit-when-idle` in dir as actor; extra env entries
// go last.
func (f *scaleFarm) worker(dir, actor string, extra ...string) *exec.Cmd {
	cmd := exec.Command("git-norma", "loop", "--worker", "--exit-when-idle", "--poll", "200ms", "--remote", "origin")
	cmd.Dir = dir
	cmd.Env = append(append(f.env, "BEADS_ACTOR="+actor), extra...)
	log, err := os.Create(filepath.Join(f.dir, actor+".log"))
	require.NoError(f.t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(f.t, cmd.Start())
	return cmd
}

func TestScaleOut(t *testing.T) {
	if os.Getenv("NORMA_SCALE") == "" {
		t.Skip("the scale-out test is opt-in: NORMA_SCALE=1 go test -run TestScaleOut ./cmd/git-norma")
	}
	scaleOut(t, &fakeBacklog{})
}

// TestScaleOutDolt is the same with the real thing: bd 1.0.5 in server mode on a dolt
// sql-server (both on PATH; .ci/build-bd-dolt builds them from the Go module proxy). Opt-in,
// about three minutes: NORMA_DOLT=1 go test -run TestScaleOutDolt ./cmd/git-norma
func TestScaleOutDolt(t *testing.T) {
	if os.Getenv("NORMA_DOLT") == "" {
		t.Skip("the scale-out test on a dolt sql-server is opt-in: NORMA_DOLT=1 go test -run TestScaleOutDolt ./cmd/git-norma (bd and dolt on PATH)")
	}
	for _, b := range []string{"bd", "dolt"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("NORMA_DOLT is set but %s is not on PATH: build both with .ci/build-bd-dolt", b)
		}
	}
	scaleOut(t, &doltBacklog{})
}

func scaleOut(t *testing.T, backlog scaleBacklog) {
	const workers, tasks = 4, 20
	f := newScaleFarm(t, tasks, backlog)
	t.Cleanup(func() {
		if t.Failed() {
			for _, w := range []string{"w1", "w2", "w3", "w4", "w2-again"} {
				out, _ := os.ReadFile(filepath.Join(f.dir, w+".log"))
				t.Logf("worker %s:\n%s", w, out)
			}
		}
	})
	dirs := make([]string, workers)
	for i := range dirs {
		dirs[i] = f.clone(fmt.Sprintf("w%d", i+1))
	}
	// Worker 1 dies (SIGKILL, as far as the others can tell) right after its first claim: the
	// lease its claim carried runs out, and another worker reopens the task and lands it.
	claimed := time.Now()
	killed := f.worker(dirs[0], "w1", "GIT_NORMA_CRASH=claimed")
	require.Error(t, killed.Wait(), "the crash point kills the worker")
	var wg sync.WaitGroup
	for i := 1; i < workers; i++ {
		cmd := f.worker(dirs[i], fmt.Sprintf("w%d", i+1))
		wg.Add(1)
		go func() { defer wg.Done(); _ = cmd.Wait() }()
	}
	wg.Wait()
	// The others have landed everything else and gone (--exit-when-idle) while the dead
	// worker's claim still held. Once its lease has run out (and the 30 s allowed for clock
	// skew), the next worker to start reopens the task and lands it.
	time.Sleep(time.Until(claimed.Add(f.backlog.lease(f) + 31*time.Second)))
	wg.Add(1)
	last := f.worker(dirs[1], "w2-again")
	go func() { defer wg.Done(); _ = last.Wait() }()
	wg.Wait()

	status, closes := f.backlog.state(f)
	require.Len(t, status, tasks)
	for id, st := range status {
		assert.Equal(t, "closed", st, "task %s", id)
		assert.Equal(t, 1, closes[id], "task %s closed exactly once", id)
	}
	check := f.clone("check")
	f.must(check, "git", "fetch", "-q", "origin", "+refs/notes/norma:refs/notes/norma")
	log := f.must(check, "git", "log", "--format=%H%x00%P%x00%(trailers:key=Norma-Task,valueonly,separator=%x2C)", "origin/main")
	seen := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		fields := strings.Split(line, "\x00")
		require.Len(t, fields, 3)
		assert.NotContains(t, fields[1], " ", "main is linear: %s has one parent", fields[0])
		if task := strings.TrimSpace(fields[2]); task != "" {
			seen[task]++
		}
	}
	for i := 1; i <= tasks; i++ {
		id := fmt.Sprintf("norma-t%02d", i)
		assert.Equal(t, 1, seen[id], "exactly one squash commit for %s", id)
	}
	// Every landed run's journal reached the remote's notes.
	notes := f.must(check, "git", "log", "--format=%N", "--notes=refs/notes/norma", "origin/main")
	for i := 1; i <= tasks; i++ {
		assert.True(t, strings.Contains(notes, fmt.Sprintf(`"task":"norma-t%02d"`, i)), "the journal of norma-t%02d is on the remote", i)
	}
	// No task was worked twice: across all workers, each task had one run whose agent did its
	// work (the dead worker died before its first step; a run that lost the race for a claim
	// stopped before any; a run that resumed a landing that lost the race for the remote
	// skipped Do).
	worked := map[string]int{}
	for _, d := range dirs {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(d, ".norma", "norma.db")+"?mode=ro")
		require.NoError(t, err)
		rows, err := db.Query(`select task_id from runs where kind = 'run' and exists (select 1 from steps where steps.run_id = runs.run_id and role = 'do' and status != 'skipped')`)
		require.NoError(t, err)
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			worked[id]++
		}
		require.NoError(t, rows.Err())
		db.Close()
	}
	for _, id := range scaleTaskIDs(tasks) {
		assert.Equal(t, 1, worked[id], "task %s was worked by one run", id)
	}
	reaped := 0
	for _, d := range []string{"w2", "w3", "w4", "w2-again"} {
		out, _ := os.ReadFile(filepath.Join(f.dir, d+".log"))
		reaped += strings.Count(string(out), "ran out at")
	}
	assert.Equal(t, 1, reaped, "one task was reopened after its worker died")
	t.Logf("%d tasks, each closed once and landed once by one of %d workers; %d reopened after its worker died", len(status), workers, reaped)
}

// BenchmarkWorkers is the throughput of issue 20: tasks landed per minute by 1, 2 and 4
// workers sharing one backlog and one remote, when the agent dominates (each Do sleeps 2 s, or
// SCALE_AGENT_SLEEP seconds).
// It reports each as tasks/min and the 2- and 4-worker figures as a multiple of one worker's;
// the target is at least 3× with 4. Run it with (NORMA_DOLT=1 and bd and dolt on PATH: on a
// dolt sql-server, as TestScaleOutDolt):
//
//	go test -run '^$' -bench Workers -benchtime 1x ./cmd/git-norma
func BenchmarkWorkers(b *testing.B) {
	const tasks = 8
	agentSleep := cmp.Or(os.Getenv("SCALE_AGENT_SLEEP"), "2")
	perMinute := map[int]float64{}
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1, 2, 4} {
			var backlog scaleBacklog = &fakeBacklog{}
			if os.Getenv("NORMA_DOLT") != "" {
				backlog = &doltBacklog{}
			}
			f := newScaleFarm(b, tasks, backlog)
			f.env = append(f.env, "SCALE_AGENT_SLEEP="+agentSleep)
			dirs := make([]string, n)
			for w := range dirs {
				dirs[w] = f.clone(fmt.Sprintf("w%d", w+1))
			}
			start := time.Now()
			var wg sync.WaitGroup
			for w := range dirs {
				cmd := f.worker(dirs[w], fmt.Sprintf("w%d", w+1))
				wg.Add(1)
				go func() { defer wg.Done(); _ = cmd.Wait() }()
			}
			wg.Wait()
			elapsed := time.Since(start)
			status, _ := f.backlog.state(f)
			for id, st := range status {
				if st != "closed" {
					b.Fatalf("%d workers: task %s is %s", n, id, st)
				}
			}
			perMinute[n] = float64(tasks) / elapsed.Minutes()
		}
	}
	b.ReportMetric(perMinute[1], "tasks/min-1")
	b.ReportMetric(perMinute[2], "tasks/min-2")
	b.ReportMetric(perMinute[4], "tasks/min-4")
	b.ReportMetric(perMinute[2]/perMinute[1], "x-2")
	b.ReportMetric(perMinute[4]/perMinute[1], "x-4")
	b.ReportMetric(0, "ns/op")
}
