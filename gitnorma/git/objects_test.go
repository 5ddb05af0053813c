package git_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func TestCommitTree(t *testing.T) {
	r := gittest.NewRepo(t)
	ctx := context.Background()
	head := r.Must("rev-parse", "HEAD")
	want := r.Must("rev-parse", "HEAD^{tree}")

	tree, err := git.Runner{Dir: r.Dir}.CommitTree(ctx, head)
	require.NoError(t, err)
	assert.Equal(t, want, tree)

	_, err = git.Runner{Dir: r.Dir}.CommitTree(ctx, want)
	assert.Error(t, err, "a tree is not a commit")
}
