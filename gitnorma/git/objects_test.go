package git_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func TestCommitTreeAgreesWithGit(t *testing.T) {
	r := gittest.NewRepo(t)
	ctx := context.Background()
	head := r.Must("rev-parse", "HEAD")
	want := r.Must("rev-parse", "HEAD^{tree}")
	common := r.Must("rev-parse", "--path-format=absolute", "--git-common-dir")

	tree, ok := git.ReadCommitTree(common, head)
	require.True(t, ok, "a fresh commit is a loose object")
	assert.Equal(t, want, tree)

	r.Must("gc", "-q")
	_, ok = git.ReadCommitTree(common, head)
	assert.False(t, ok, "a packed commit needs git")
	tree, err := git.Runner{Dir: r.Dir}.CommitTree(ctx, common, head)
	require.NoError(t, err)
	assert.Equal(t, want, tree)

	_, ok = git.ReadCommitTree(common, want)
	assert.False(t, ok, "a tree is not a commit")
}
