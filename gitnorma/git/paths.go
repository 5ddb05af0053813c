package git

import (
	"context"
	"strings"
)

// These are functions of a Runner rather than methods: what the hooks' gate asks of a commit
// in progress, kept here with every other git command line.

// IndependentCommits are those of commits that no other of them reaches (merge-base
// --independent).
func IndependentCommits(ctx context.Context, r Runner, commits []string) ([]string, error) {
	out, err := r.Output(ctx, append([]string{"merge-base", "--independent"}, commits...)...)
	return strings.Fields(out), err
}

// PathsChanged are the paths whose content differs between the commits from and to (no rename
// detection: a rename is both its paths).
func PathsChanged(ctx context.Context, r Runner, from, to string) ([]string, error) {
	out, err := r.Output(ctx, "diff", "--no-renames", "--name-only", "-z", from, to, "--")
	return splitNUL(out), err
}

// StatusPaths are the paths git status lists: changed in the index or the work tree against
// HEAD, or untracked. It takes no lock (a hook runs while git holds the index).
func StatusPaths(ctx context.Context, r Runner) ([]string, error) {
	out, err := r.Output(ctx, "--no-optional-locks", "status", "--porcelain", "-z", "--no-renames", "--untracked-files=all")
	var paths []string
	for _, e := range splitNUL(out) {
		if len(e) > 3 { // "XY path"
			paths = append(paths, e[3:])
		}
	}
	return paths, err
}

// RemoteURLs are the URLs git fetches from and pushes to for the remote name, as
// url.<base>.insteadOf and pushInsteadOf rewrite them.
func RemoteURLs(ctx context.Context, r Runner, name string) ([]string, error) {
	var urls []string
	for _, args := range [][]string{{"--all"}, {"--all", "--push"}} {
		out, err := r.Output(ctx, append(append([]string{"remote", "get-url"}, args...), "--", name)...)
		if err != nil {
			return nil, err
		}
		urls = append(urls, strings.Split(out, "\n")...)
	}
	return urls, nil
}

// splitNUL splits git's -z output into its entries.
func splitNUL(out string) []string {
	if out = strings.TrimSuffix(out, "\x00"); out == "" {
		return nil
	}
	return strings.Split(out, "\x00")
}
