package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkBacklogSize is issue 21's: what the embedded backlog's size costs. `next --json`,
// `task list --json` and a one-task run (--no-land) with 10,000 tasks in .beads/issues.jsonl
// against the same with 100 (records cloned from ones `git norma task add` wrote, a third of
// them closed), each as "x-floor" with the peak RSS of the large side in MB (and, for next,
// that of the first one, which builds the index, as "MB-cold-rss"). Targets: next and list
// ≤ 3x and ≤ 40 MB, the run ≤ 1.3x. NORMA_BENCH_BACKLOG sets the large size (50000: no
// command above 1 s).
func BenchmarkBacklogSize(b *testing.B) {
	large := 10000
	if v := os.Getenv("NORMA_BENCH_BACKLOG"); v != "" {
		if _, err := fmt.Sscan(v, &large); err != nil {
			b.Fatalf("NORMA_BENCH_BACKLOG=%q: %v", v, err)
		}
	}
	config := `{"agents": {"do": {"type": "exec", "cmd": ["./agents/do.sh"]}}, "retention": {"keep_last": 0, "keep_days": 0}}`
	small, big := newBenchRepo(b, config), newBenchRepo(b, config)
	for _, r := range []*benchRepo{small, big} {
		r.write("agents/do.sh", doAgent)
		r.must("git", "add", "agents")
		r.must("git", "commit", "-q", "-m", "agents")
	}
	seeds := small.seedTasks()
	small.fillBacklog(seeds, 100)
	big.fillBacklog(seeds, large)

	// The first next after the backlog changed brings the index of heads up to date (all of it,
	// here: there is none yet): measured apart, as "cold", once (b.Run runs its function more
	// than once).
	cold := big.peakRSS("next", "--json")
	small.peakRSS("next", "--json")
	for _, args := range [][]string{{"next", "--json"}, {"task", "list", "--json"}} {
		b.Run(args[0], func(b *testing.B) {
			if args[0] == "next" {
				b.ReportMetric(float64(cold)/1024, "MB-cold-rss")
			}
			var norma, floor []time.Duration
			var peak int64
			for i := 0; i < b.N; i++ {
				d, rss := big.timedRSS(args...)
				norma, peak = append(norma, d), max(peak, rss)
				d, _ = small.timedRSS(args...)
				floor = append(floor, d)
			}
			reportRatio(b, norma, floor)
			b.ReportMetric(float64(peak)/1024, "MB-peak-rss")
		})
	}
	b.Run("run", func(b *testing.B) {
		var norma, floor []time.Duration
		var peak int64
		for i := 0; i < b.N; i++ {
			task := big.addTask(fmt.Sprintf("run %d", i), "count.txt", "test -f count.txt")
			d, rss := big.timedRSS("-q", "run", task, "--no-land")
			norma, peak = append(norma, d), max(peak, rss)
			task = small.addTask(fmt.Sprintf("run %d", i), "count.txt", "test -f count.txt")
			d, _ = small.timedRSS("-q", "run", task, "--no-land")
			floor = append(floor, d)
		}
		reportRatio(b, norma, floor)
		b.ReportMetric(float64(peak)/1024, "MB-peak-rss")
	})
}

// seedTasks adds three tasks with git-norma and returns their records as it wrote them, then
// empties the backlog again.
func (r *benchRepo) seedTasks() [][]byte {
	r.b.Helper()
	for i := range 3 {
		r.addTask(fmt.Sprintf("Seed %d", i), fmt.Sprintf("seed-%d.txt", i), fmt.Sprintf("test -f seed-%d.txt", i))
	}
	path := filepath.Join(r.dir, ".beads", "issues.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		r.b.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		r.b.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(data), []byte("\n"))
}

// fillBacklog writes n tasks cloned from seeds, each with an id, title and created time of its
// own and every third one closed, into the repository's .beads/issues.jsonl.
func (r *benchRepo) fillBacklog(seeds [][]byte, n int) {
	r.b.Helper()
	var out bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		var rec map[string]any
		if err := json.Unmarshal(seeds[i%len(seeds)], &rec); err != nil {
			r.b.Fatal(err)
		}
		at := start.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		rec["id"] = fmt.Sprintf("norma-b%05d", i)
		rec["title"] = fmt.Sprintf("Backlog task %d", i)
		rec["created_at"], rec["updated_at"] = at, at
		rec["priority"] = 1 + i%3
		if i%3 == 0 {
			rec["status"], rec["closed_at"] = "closed", at
		}
		line, err := json.Marshal(rec)
		if err != nil {
			r.b.Fatal(err)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	r.write(".beads/issues.jsonl", out.String())
}

// timedRSS runs git-norma with args, which has to succeed, and returns how long it took and
// its peak RSS in KiB (see peakRSS; it runs the command once more to measure that).
func (r *benchRepo) timedRSS(args ...string) (time.Duration, int64) {
	r.b.Helper()
	d := r.timed("git-norma", args...)
	return d, r.peakRSS(args...)
}

// peakRSS runs git-norma with args under GNU time and returns its peak RSS in KiB (0 where
// /usr/bin/time is missing). Not from the rusage os/exec gives: Go starts children with
// vfork, and Linux keeps the parent's high-water mark, the test binary's, in the child's
// ru_maxrss when it execs.
func (r *benchRepo) peakRSS(args ...string) int64 {
	r.b.Helper()
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		r.b.Log("no /usr/bin/time: peak RSS not measured")
		return 0
	}
	out := filepath.Join(r.b.TempDir(), "rss")
	cmd := r.cmd("/usr/bin/time", append([]string{"-f", "%M", "-o", out, "git-norma"}, args...)...)
	_ = cmd.Run() // the command may fail on purpose (BenchmarkMemory1GiBOutput)
	data, err := os.ReadFile(out)
	if err != nil {
		r.b.Fatal(err)
	}
	lines := strings.Fields(string(data))
	var kib int64
	if len(lines) == 0 {
		r.b.Fatalf("GNU time wrote nothing for git-norma %v", args)
	}
	if _, err := fmt.Sscan(lines[len(lines)-1], &kib); err != nil {
		r.b.Fatalf("GNU time wrote %q: %v", data, err)
	}
	return kib
}
