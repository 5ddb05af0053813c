package tracker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBDAddDependency(t *testing.T) {
	ctx := context.Background()
	f := newFakeBD(t)
	f.setTable(
		entry("dep_add", "dep", "add", "norma-uq0.1.2", "norma-uq0.1.1", "-t", "blocks", "--json"),
		entry("err_dep_add_unknown", "dep", "add", "norma-zzzz", "norma-uq0.1.1", "-t", "discovered-from", "--json"),
		entry(f.sample("bogus", `{"status":"exists"}`, "", 0), "dep", "add", "norma-a", "norma-b", "-t", "related", "--json"),
	)

	require.NoError(t, f.bd.AddDependency(ctx, "norma-uq0.1.2", "norma-uq0.1.1", "blocks"))
	assert.Equal(t, [][]string{{"dep", "add", "norma-uq0.1.2", "norma-uq0.1.1", "-t", "blocks", "--json"}}, f.argvs())

	err := f.bd.AddDependency(ctx, "norma-zzzz", "norma-uq0.1.1", "discovered-from")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), `no issue found matching "norma-zzzz"`)

	err = f.bd.AddDependency(ctx, "norma-a", "norma-b", "related")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `want {"status":"added"}`)

	calls := len(f.argvs())
	assert.Error(t, f.bd.AddDependency(ctx, "", "norma-b", "blocks"))
	assert.Error(t, f.bd.AddDependency(ctx, "norma-a", "norma-b", "owns"))
	assert.Len(t, f.argvs(), calls, "refused before calling bd")
}

func TestJSONLAddDependency(t *testing.T) {
	ctx := context.Background()
	j, _ := newTestJSONL(t)
	a, err := j.Create(ctx, NewTask{Title: "A", Priority: PriorityUnset})
	require.NoError(t, err)
	b, err := j.Create(ctx, NewTask{Title: "B", Priority: PriorityUnset})
	require.NoError(t, err)

	require.NoError(t, j.AddDependency(ctx, b.ID, a.ID, "blocks"))
	require.NoError(t, j.AddDependency(ctx, b.ID, a.ID, "blocks"), "adding an existing edge is a no-op")
	got, err := j.Get(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, got.Dependencies, 1)
	assert.Equal(t, Dependency{IssueID: b.ID, DependsOnID: a.ID, Type: "blocks", CreatedAt: got.Dependencies[0].CreatedAt, Metadata: "{}"}, got.Dependencies[0])

	assert.ErrorContains(t, j.AddDependency(ctx, a.ID, b.ID, "blocks"), "cycle")
	require.NoError(t, j.AddDependency(ctx, a.ID, b.ID, "related"), "non-blocking edges may go both ways")
	assert.ErrorIs(t, j.AddDependency(ctx, a.ID, "norma-none", "blocks"), ErrNotFound)
	ready, err := j.Ready(ctx)
	require.NoError(t, err)
	require.Len(t, ready, 1)
	assert.Equal(t, a.ID, ready[0].ID)
}
