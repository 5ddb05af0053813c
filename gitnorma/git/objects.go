package git

import (
	"bufio"
	"compress/zlib"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadCommitTree reads the tree id of commit from its loose object in the common git
// directory, without starting git: a commit the orchestrator just made is loose. ok is false
// whenever the answer needs git (a packed or alternate object, an id that is not a full one).
func ReadCommitTree(common, commit string) (tree string, ok bool) {
	if !isObjectID(commit) {
		return "", false
	}
	f, err := os.Open(filepath.Join(common, "objects", commit[:2], commit[2:]))
	if err != nil {
		return "", false
	}
	defer f.Close()
	z, err := zlib.NewReader(f)
	if err != nil {
		return "", false
	}
	defer z.Close()
	r := bufio.NewReader(z)
	header, err := r.ReadString(0)
	if err != nil || !strings.HasPrefix(header, "commit ") {
		return "", false
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", false
	}
	tree, found := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "tree ")
	if !found || !isObjectID(tree) || len(tree) != len(commit) {
		return "", false
	}
	return tree, true
}

// CommitTree is the tree id of commit: read from its loose object in common when it is one,
// else asked of git.
func (r Runner) CommitTree(ctx context.Context, common, commit string) (string, error) {
	if tree, ok := ReadCommitTree(common, commit); ok {
		return tree, nil
	}
	tree, err := r.Output(ctx, "rev-parse", "--verify", "-q", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("read the tree of %.10s: %w", commit, err)
	}
	return tree, nil
}
