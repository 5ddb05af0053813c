package notes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// BenchmarkAdd5000thNote adds a journal note when refs/notes/norma already holds 4,999 notes
// (git fans them out into subtrees) and compares it with a plain `git notes add` of the same
// size on the same notes tree, measured in the same run. It reports the ratio (target ≤ 2).
//
//	go test -run '^$' -bench 5000th ./notes
func BenchmarkAdd5000thNote(b *testing.B) {
	ctx := context.Background()
	repo := gittest.NewRepo(b)
	commits := manyNotedCommits(b, repo.Dir, 5000)
	target := commits[len(commits)-1] // the one commit without a note
	if listed := strings.Count(repo.Must("notes", "--ref", Ref, "list"), "\n") + 1; listed != 4999 {
		b.Fatalf("setup made %d notes, want 4999", listed)
	}
	j := Journal{Git: repo.Git}
	e := Entry{TS: Stamp(time.Now()), Kind: KindStep, Task: "norma-b", Run: "r-b", Step: 2, Role: "do", Status: "ok", Summary: "bench"}
	line, _ := encode([]Entry{e})
	var floor, norma time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		out, err := exec.Command("git", "-C", repo.Dir, "notes", "--ref", Ref, "add", "-m", line[0], target).CombinedOutput()
		if err != nil {
			b.Fatalf("git notes add: %v\n%s", err, out)
		}
		floor += time.Since(start)

		b.StopTimer()
		repo.Must("notes", "--ref", Ref, "remove", target)
		b.StartTimer()

		start = time.Now()
		if err := j.Add(ctx, target, e); err != nil {
			b.Fatal(err)
		}
		norma += time.Since(start)

		b.StopTimer()
		repo.Must("notes", "--ref", Ref, "remove", target)
		b.StartTimer()
	}
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "floor-µs/op")
	b.ReportMetric(float64(norma.Microseconds())/float64(b.N), "norma-µs/op")
	b.ReportMetric(float64(norma)/float64(floor), "ratio")
}

// manyNotedCommits makes n commits with fast-import and notes on all but the last.
func manyNotedCommits(b *testing.B, dir string, n int) []string {
	b.Helper()
	var s strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&s, "commit refs/heads/many\nmark :%d\ncommitter Bench <b@example.com> %d +0000\ndata 2\n%d\n", i, 1700000000+i, i%10)
		if i > 1 {
			fmt.Fprintf(&s, "from :%d\n", i-1)
		}
	}
	for i := 1; i < n; i++ {
		note := fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.000Z","kind":"step","task":"norma-b","run":"r-%d"}`, i)
		if i == 1 {
			fmt.Fprintf(&s, "commit %s\ncommitter Bench <b@example.com> 1700000000 +0000\ndata 5\nnotes\n", Ref)
		}
		fmt.Fprintf(&s, "N inline :%d\ndata %d\n%s\n", i, len(note)+1, note)
	}
	marks := filepath.Join(b.TempDir(), "marks")
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet", "--export-marks="+marks)
	cmd.Stdin = strings.NewReader(s.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	out, err := os.ReadFile(marks)
	if err != nil {
		b.Fatal(err)
	}
	commits := make([]string, n)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var mark int
		var sha string
		if _, err := fmt.Sscanf(line, ":%d %s", &mark, &sha); err == nil && mark >= 1 && mark <= n {
			commits[mark-1] = sha
		}
	}
	return commits
}
