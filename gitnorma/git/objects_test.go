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

func TestIsAncestor(t *testing.T) {
	r := gittest.NewRepo(t)
	ctx := context.Background()
	g := git.Runner{Dir: r.Dir}
	first := r.Must("rev-parse", "HEAD")
	r.Commit("second")
	second := r.Must("rev-parse", "HEAD")
	for _, tt := range []struct {
		anc, desc string
		want      bool
	}{{first, second, true}, {second, second, true}, {second, first, false}} {
		got, err := g.IsAncestor(ctx, tt.anc, tt.desc)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%.7s before %.7s", tt.anc, tt.desc)
	}
	_, err := g.IsAncestor(ctx, first, "0000000000000000000000000000000000000001")
	assert.Error(t, err, "an unknown commit is no answer")
}
