package worktree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
	"github.com/git-norma/git-norma/notes"
)

// BenchmarkLand20kFiles lands a 1-file change on a 20,000-file repository and compares
// git-norma's landing (Manager.Land plus the journal note on the squash commit) with the
// plain-git floor measured in the same run: merge-tree, commit-tree, update-ref, notes add.
// It reports the ratio (target ≤ 1.3).
//
//	go test -run '^$' -bench Land20k ./worktree
func BenchmarkLand20kFiles(b *testing.B) {
	ctx := context.Background()
	repo := bigRepo(b, 200, 100)
	base := repo.Must("rev-parse", "HEAD")
	repo.Must("switch", "-q", "-c", "elsewhere") // the targets are not checked out: update-ref path
	m := NewManager(repo.Dir)
	journal := notes.Journal{Git: repo.Git}
	var floor, norma time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		task := taskCommit(b, repo, base, i)
		repo.Must("update-ref", "refs/heads/target", base)
		repo.Must("update-ref", "refs/heads/task", task)
		b.StartTimer()

		start := time.Now()
		floorLand(b, repo.Dir, "target", "task")
		floor += time.Since(start)

		b.StopTimer()
		repo.Must("update-ref", "refs/heads/target", base)
		b.StartTimer()

		start = time.Now()
		res, err := m.Land(ctx, LandOptions{Target: "target", TaskBranch: "task", Message: "feat: bench\n"})
		if err != nil {
			b.Fatal(err)
		}
		if err := journal.Add(ctx, res.Commit, notes.Entry{TS: notes.Stamp(time.Now()), Kind: notes.KindLand, Task: "norma-b", Run: "r-b"}); err != nil {
			b.Fatal(err)
		}
		norma += time.Since(start)
	}
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "floor-µs/op")
	b.ReportMetric(float64(norma.Microseconds())/float64(b.N), "norma-µs/op")
	b.ReportMetric(float64(norma)/float64(floor), "ratio")
}

// floorLand is what a shell script landing a branch would do, and nothing more.
func floorLand(b *testing.B, dir, target, task string) {
	run := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			b.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	tree := run("merge-tree", "--write-tree", target, task)
	commit := run("commit-tree", tree, "-p", target, "-m", "feat: bench")
	run("update-ref", "refs/heads/"+target, commit)
	run("notes", "--ref=refs/notes/floor", "add", "-m", "landed", commit)
}

// bigRepo makes a repository with dirs×files files in one commit, built with fast-import.
func bigRepo(b *testing.B, dirs, files int) *gittest.Repo {
	b.Helper()
	repo := gittest.NewRepo(b)
	var stream strings.Builder
	fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter Bench <b@example.com> 1700000000 +0000\ndata 4\nbig\nfrom refs/heads/main^0\n")
	for d := range dirs {
		for f := range files {
			content := fmt.Sprintf("file %d/%d\n", d, f)
			fmt.Fprintf(&stream, "M 100644 inline d%03d/f%03d.txt\ndata %d\n%s", d, f, len(content), content)
		}
	}
	cmd := exec.Command("git", "-C", repo.Dir, "fast-import", "--quiet")
	cmd.Stdin = strings.NewReader(stream.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v\n%s", err, out)
	}
	repo.Must("reset", "-q", "--hard", "main")
	return repo
}

// taskCommit makes a commit on top of base that changes one file, without touching any
// checkout (a temporary index).
func taskCommit(b *testing.B, repo *gittest.Repo, base string, i int) string {
	b.Helper()
	index := filepath.Join(b.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + index}
	g := git.Runner{Dir: repo.Dir, Env: env}
	ctx := context.Background()
	must := func(out string, err error) string {
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	must(g.Output(ctx, "read-tree", base))
	blob := must(g.Input(ctx, strings.NewReader(fmt.Sprintf("changed %d\n", i)), "hash-object", "-w", "--stdin"))
	must(g.Output(ctx, "update-index", "--cacheinfo", "100644,"+blob+",d007/f042.txt"))
	tree := must(g.Output(ctx, "write-tree"))
	defer os.Remove(index)
	return must(g.Output(ctx, "commit-tree", tree, "-p", base, "-m", "task change"))
}
