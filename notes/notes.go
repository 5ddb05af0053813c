// Package notes keeps git-norma's journal in git notes under refs/notes/norma, so anyone with
// the repository can read what happened with stock git: `git log --notes=norma`,
// `git notes --ref=norma show <commit>`.
//
// Each entry is one JSON line whose first key is its RFC3339 UTC timestamp. A note is the
// sorted, de-duplicated set of its lines, which is exactly what git's cat_sort_uniq merge
// strategy produces — so notes written on two clones merge without conflicts and lose nothing.
package notes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Ref is the notes ref of the journal.
const Ref = "refs/notes/norma"

// Entry is one journal line. Field order matters: ts first, so lines sort by time.
type Entry struct {
	TS   string `json:"ts"`
	Kind string `json:"kind"`
	Task string `json:"task"`
	Run  string `json:"run"`
	Step int    `json:"step,omitempty"`
	// Iteration is the step's iteration of its run (0 in entries written before it was kept).
	Iteration int    `json:"iteration,omitempty"`
	Role      string `json:"role,omitempty"`
	Status    string `json:"status,omitempty"`
	Verdict   string `json:"verdict,omitempty"`
	Summary   string `json:"summary,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// Kinds of entries.
const (
	KindStep = "step"
	KindLand = "land"
)

// Stamp formats t the way entries carry it.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Journal reads and writes the notes of one repository.
type Journal struct {
	Git git.Runner
	// Lock, when set, serialises writers of refs/notes/norma across processes: a note is read,
	// merged and rewritten, and two writers must not interleave (one would drop the other's
	// lines). It returns the function that releases the lock.
	Lock func(ctx context.Context) (func(), error)
}

// locked runs fn under Lock (if any).
func (j Journal) locked(ctx context.Context, fn func() error) error {
	if j.Lock == nil {
		return fn()
	}
	unlock, err := j.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// Add merges entries into the note on commit: existing lines are kept, new ones added, the
// result sorted and de-duplicated. Adding the same entry twice changes nothing, so mirrors
// can be repaired by replaying.
func (j Journal) Add(ctx context.Context, commit string, entries ...Entry) error {
	return j.locked(ctx, func() error { return j.add(ctx, commit, entries) })
}

func (j Journal) add(ctx context.Context, commit string, entries []Entry) error {
	add, err := encode(entries)
	if err != nil {
		return err
	}
	// Most notes go on a commit that has none yet: one `git notes add` without -f creates it,
	// and fails harmlessly when a note exists, which is the only case that needs a read.
	if _, err := j.Git.Input(ctx, strings.NewReader(body(add)), "notes", "--ref", Ref, "add", "-F", "-", commit); err == nil {
		return nil
	} else if !strings.Contains(err.Error(), "existing notes") {
		return fmt.Errorf("write journal note on %.10s: %w", commit, err)
	}
	lines, err := j.lines(ctx, commit)
	if err != nil {
		return err
	}
	merged := union(lines, add)
	if slices.Equal(merged, lines) {
		return nil
	}
	if _, err := j.Git.Input(ctx, strings.NewReader(body(merged)), "notes", "--ref", Ref, "add", "-f", "-F", "-", commit); err != nil {
		return fmt.Errorf("write journal note on %.10s: %w", commit, err)
	}
	return nil
}

// encode turns entries into sorted, unique JSON lines.
func encode(entries []Entry) ([]string, error) {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		lines = append(lines, string(b))
	}
	return union(lines, nil), nil
}

// union is the sorted, de-duplicated lines of a and b: what cat_sort_uniq makes of them.
func union(a, b []string) []string {
	lines := append(slices.Clone(a), b...)
	slices.Sort(lines)
	return slices.Compact(lines)
}

func body(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// Read returns the entries of the note on commit (none when there is no note). Lines that are
// not entries (a human's note, say) are skipped, not rejected.
func (j Journal) Read(ctx context.Context, commit string) ([]Entry, error) {
	lines, err := j.lines(ctx, commit)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	for _, l := range lines {
		var e Entry
		dec := json.NewDecoder(strings.NewReader(l))
		if dec.Decode(&e) == nil && e.TS != "" {
			entries = append(entries, e)
		}
	}
	return entries, nil
}

func (j Journal) lines(ctx context.Context, commit string) ([]string, error) {
	// %N is the note as it is (empty without one); unlike `git notes show`, which runs
	// `git show` for it, this is one process.
	out, err := j.Git.Output(ctx, "log", "-1", "--no-walk", "--format=%N", "--notes="+Ref, commit, "--")
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// RewriteRef is the notes.rewriteRef value that makes amend and rebase carry the journal along:
// a glob matching Ref alone. For an exact ref, git (2.39) prints "warning: notes ref
// refs/notes/norma is invalid" on every amend and rebase until the first note; a glob is silent.
const RewriteRef = "refs/notes/norm[a]"

// Configure sets what makes the journal survive merges and rewrites: the cat_sort_uniq merge
// strategy for refs/notes/norma, and RewriteRef in notes.rewriteRef, replacing an exact Ref
// there (an older git-norma's) and keeping the user's other rewrite refs.
func Configure(ctx context.Context, g git.Runner) error {
	if err := g.Run(ctx, "config", "notes.norma.mergeStrategy", "cat_sort_uniq"); err != nil {
		return err
	}
	refs, _ := g.Output(ctx, "config", "--get-all", "notes.rewriteRef")
	values := strings.Split(refs, "\n")
	if slices.Contains(values, Ref) {
		if err := g.Run(ctx, "config", "--unset-all", "--fixed-value", "notes.rewriteRef", Ref); err != nil {
			return err
		}
	}
	if slices.Contains(values, RewriteRef) {
		return nil
	}
	return g.Run(ctx, "config", "--add", "notes.rewriteRef", RewriteRef)
}

// CopiedOnRewrite says whether the notes.rewriteRef values carry the journal along on amend
// and rebase (RewriteRef, or Ref itself).
func CopiedOnRewrite(values []string) bool {
	return slices.Contains(values, RewriteRef) || slices.Contains(values, Ref)
}

// ShowInLog adds refs/notes/norma to notes.displayRef, so plain `git log` shows the journal.
func ShowInLog(ctx context.Context, g git.Runner) error {
	refs, _ := g.Output(ctx, "config", "--get-all", "notes.displayRef")
	if slices.Contains(strings.Split(refs, "\n"), Ref) {
		return nil
	}
	return g.Run(ctx, "config", "--add", "notes.displayRef", Ref)
}

// All reads every entry of every journal note (notes list, cat-file --batch), for readers that
// do not know which commits carry a run's notes. Lines on several commits come back once.
func (j Journal) All(ctx context.Context) ([]Entry, error) {
	list, err := j.Git.Output(ctx, "notes", "--ref", Ref, "list")
	if err != nil || list == "" {
		if j.Git.Run(ctx, "rev-parse", "--verify", "-q", Ref) != nil {
			return nil, nil // no journal at all
		}
		return nil, err
	}
	var blobs strings.Builder
	for _, line := range strings.Split(list, "\n") {
		if blob, _, ok := strings.Cut(line, " "); ok {
			blobs.WriteString(blob + "\n")
		}
	}
	out, err := j.Git.Input(ctx, strings.NewReader(blobs.String()), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var entries []Entry
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, `{"ts":`) || seen[line] {
			continue
		}
		seen[line] = true
		var e Entry
		if json.Unmarshal([]byte(line), &e) == nil {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.TS, b.TS) })
	return entries, nil
}
