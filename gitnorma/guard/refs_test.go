package guard

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

// The guard reads refs from the files, or through git where a symbolic link under refs/ makes
// the files mislead. Both must read a symbolic ref (refs/remotes/origin/HEAD) alike, as where
// it leads: read as a commit through git, it differed from its snapshot, and the guard took
// your origin/HEAD for a ref the step moved.
func TestRefsReadAlikeFromFilesAndThroughGit(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Must("update-ref", "refs/remotes/origin/main", "HEAD")
	repo.Must("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
	repo.Must("pack-refs", "--all")
	repo.Must("update-ref", "refs/remotes/origin/loose", "HEAD")
	g := &Guard{Places: placesOf(repo.Dir)}
	ctx := context.Background()
	files, err := g.remotes(ctx, false)
	require.NoError(t, err)
	viaGit, err := g.remotes(ctx, true)
	require.NoError(t, err)
	assert.Equal(t, "ref: refs/remotes/origin/main", files["refs/remotes/origin/HEAD"])
	assert.Equal(t, files, viaGit)
}
