package git

import (
	"context"
	"strconv"
	"strings"
)

// The questions about history: which commits a range holds, with their trailers, and how task
// branches moved (their reflogs).

// LogQuery selects commits for Log: reachable from Revs but not from Not, whose message has a
// line matching Grep (a fixed string when Fixed), since a time, at most Max (0: all).
type LogQuery struct {
	Revs, Not []string
	Grep      string
	Fixed     bool
	Since     string
	Max       int
	NoMerges  bool
}

// Log prints format for each commit q selects, newest first, one a line.
func (r Runner) Log(ctx context.Context, format string, q LogQuery) (string, error) {
	args := []string{"log", "--format=" + format}
	if q.Max > 0 {
		args = append(args, "-"+strconv.Itoa(q.Max))
	}
	if q.NoMerges {
		args = append(args, "--no-merges")
	}
	if q.Fixed {
		args = append(args, "-F")
	}
	if q.Grep != "" {
		args = append(args, "--grep="+q.Grep)
	}
	if q.Since != "" {
		args = append(args, "--since="+q.Since)
	}
	args = append(args, q.Revs...)
	for _, n := range q.Not {
		args = append(args, "^"+n)
	}
	return r.Output(ctx, append(args, "--")...)
}

// IsAncestor says whether anc is an ancestor of desc (or desc itself). Only git's "no" (exit
// 1) is false; anything else that failed (an unknown commit) is an error.
func (r Runner) IsAncestor(ctx context.Context, anc, desc string) (bool, error) {
	err := r.Run(ctx, "merge-base", "--is-ancestor", anc, desc)
	if ExitCodeOf(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// Commits lists the commits reachable from include and not from exclude (git rev-list).
func (r Runner) Commits(ctx context.Context, include, exclude []string) ([]string, error) {
	args := append(append([]string{"rev-list"}, include...), "--not")
	out, err := r.Output(ctx, append(args, exclude...)...)
	return strings.Fields(out), err
}

// CommitTrailers is a commit and those of its message's trailers that were asked for.
type CommitTrailers struct {
	ID       string
	Trailers []Trailer // in the message's order
}

// Trailer is one "Key: value" trailer of a commit message, the key as the message spells it.
type Trailer struct {
	Key, Value string
}

// TrailersOf lists the commits reachable from include and not from exclude, newest first in
// topological order, each with its trailers whose key is among keys (matched as git does,
// ignoring case).
func (r Runner) TrailersOf(ctx context.Context, keys, include, exclude []string) ([]CommitTrailers, error) {
	format := "--format=%H%x1f%(trailers:"
	for _, k := range keys {
		format += "key=" + k + ","
	}
	args := append([]string{"rev-list", "--topo-order", format + "separator=%x1f)"}, include...)
	out, err := r.Output(ctx, append(append(args, "--not"), exclude...)...)
	if err != nil {
		return nil, err
	}
	var commits []CommitTrailers
	for _, line := range strings.Split(out, "\n") {
		id, trailers, ok := strings.Cut(line, "\x1f")
		if !ok {
			continue // rev-list's "commit <id>" line
		}
		c := CommitTrailers{ID: id}
		for _, t := range strings.Split(trailers, "\x1f") {
			if key, value, ok := strings.Cut(t, ":"); ok {
				c.Trailers = append(c.Trailers, Trailer{Key: strings.TrimSpace(key), Value: strings.TrimSpace(value)})
			}
		}
		commits = append(commits, c)
	}
	return commits, nil
}

// ReflogEntry is one entry of a ref's reflog: the ref's full name, the commit it moved to, and
// git's message for the move ("commit: ...", "reset: moving to ...").
type ReflogEntry struct {
	Ref, ID, Message string
}

// Reflogs lists the reflog entries of the refs matching glob (log -g --glob), each ref's
// newest first. Signatures are not shown, whatever log.showSignature says: their output would
// be mixed into the entries.
func (r Runner) Reflogs(ctx context.Context, glob string) ([]ReflogEntry, error) {
	out, err := r.Output(ctx, "-c", "log.showSignature=false", "log", "-g", "--format=%gD%x1f%H%x1f%gs", "--glob="+glob)
	if err != nil {
		return nil, err
	}
	var entries []ReflogEntry
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\x1f", 3)
		if len(f) != 3 {
			continue
		}
		ref, _, _ := strings.Cut(f[0], "@{")
		entries = append(entries, ReflogEntry{Ref: ref, ID: f[1], Message: f[2]})
	}
	return entries, nil
}
