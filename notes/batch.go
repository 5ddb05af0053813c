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
// refs/notes/norma: a run's journal is one line in `git log --all`, not one per step commit.
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
	// Each commit's note once, in the order of first mention: its lines now, and every
	// entry for it.
	var order []string
	merged := map[string][]string{}
	for _, n := range all {
		add, err := encode(n.Entries)
		if err != nil {
			return err
		}
		lines, seen := merged[n.Commit]
		if !seen {
			if lines, err = j.lines(ctx, n.Commit); err != nil {
				return err
			}
			order = append(order, n.Commit)
		}
		merged[n.Commit] = union(lines, add)
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
	for _, commit := range order {
		b := body(merged[commit])
		fmt.Fprintf(&in, "N inline %s\ndata %d\n%s\n", commit, len(b), b)
	}
	// Without --force, fast-import refuses to move the ref anywhere but forward from the tip it
	// was given: a note written meanwhile (outside the lock) is never dropped.
	if _, err := j.Git.Input(ctx, strings.NewReader(in.String()), "fast-import", "--quiet", "--date-format=raw"); err != nil {
		return fmt.Errorf("write the journal notes of %d commits: %w", len(all), err)
	}
	return nil
}
