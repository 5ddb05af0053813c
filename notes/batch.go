package notes

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Note is the entries one commit's note gets.
type Note struct {
	Commit  string
	Entries []Entry
}

// AddAll merges each note's entries into its commit's note, as Add does, in one commit of
// refs/notes/norma however many commits it notes: a run's journal is one commit in `git log
// --all`, not one per step commit. Several notes go through `git fast-import`, one through
// `git notes add`.
func (j Journal) AddAll(ctx context.Context, all []Note) error {
	all = slices.DeleteFunc(slices.Clone(all), func(n Note) bool { return len(n.Entries) == 0 })
	switch len(all) {
	case 0:
		return nil
	case 1:
		return j.Add(ctx, all[0].Commit, all[0].Entries...)
	}
	return j.locked(ctx, func() error { return j.addAll(ctx, all) })
}

func (j Journal) addAll(ctx context.Context, all []Note) error {
	existing, err := j.existing(ctx, all)
	if err != nil {
		return err
	}
	ident, err := j.Git.Output(ctx, "var", "GIT_COMMITTER_IDENT")
	if err != nil {
		return err
	}
	var in strings.Builder
	msg := "Notes added by 'git norma'\n"
	fmt.Fprintf(&in, "commit %s\ncommitter %s\ndata %d\n%s", Ref, ident, len(msg), msg)
	if tip, err := j.Git.Output(ctx, "rev-parse", "--verify", "-q", Ref); err == nil {
		fmt.Fprintf(&in, "from %s\n", tip)
	}
	merged := map[string][]string{}
	for _, n := range all {
		add, err := encode(n.Entries)
		if err != nil {
			return err
		}
		lines := append(slices.Clone(existing[n.Commit]), merged[n.Commit]...)
		lines = append(lines, add...)
		slices.Sort(lines)
		merged[n.Commit] = slices.Compact(lines)
	}
	for _, n := range all {
		lines, ok := merged[n.Commit]
		if !ok {
			continue // the same commit twice: written once, with both notes' entries
		}
		delete(merged, n.Commit)
		b := body(lines)
		fmt.Fprintf(&in, "N inline %s\ndata %d\n%s\n", n.Commit, len(b), b)
		j.Written.set(n.Commit, lines)
	}
	// Without --force, fast-import refuses to move the ref anywhere but forward from the tip it
	// was given: a note written meanwhile (outside the lock) is never dropped.
	if _, err := j.Git.Input(ctx, strings.NewReader(in.String()), "fast-import", "--quiet", "--date-format=raw"); err != nil {
		return fmt.Errorf("write the journal notes of %d commits: %w", len(all), err)
	}
	return nil
}

// existing returns the note lines already on the commits of all, reading only the commits
// whose notes this journal cannot know: a run's own new commits have none but what it wrote.
func (j Journal) existing(ctx context.Context, all []Note) (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range all {
		if lines, known := j.Written.get(n.Commit); known {
			out[n.Commit] = lines
		} else if !j.Written.owns(n.Commit) {
			lines, err := j.lines(ctx, n.Commit)
			if err != nil {
				return nil, err
			}
			out[n.Commit] = lines
		}
	}
	return out, nil
}
