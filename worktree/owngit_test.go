package worktree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommitLeavesTheAgentsGitDirectoryAlone: git-norma's commit neither reads nor writes the
// worktree's git directory, which a confined agent may write — and a process of its step that
// outlived it may change while the commit runs (a link at COMMIT_EDITMSG or logs/HEAD would
// have git-norma's git write wherever it points). The agent's git still sees the commit.
func TestCommitLeavesTheAgentsGitDirectoryAlone(t *testing.T) {
	f, ws := wsFixture(t)
	since := f.state(ws)
	admin := ws.GitDir()
	logBefore, err := os.ReadFile(filepath.Join(admin, "logs", "HEAD"))
	require.NoError(t, err)
	writeFile(t, ws.Dir(), "a.txt", "x\n")

	res, err := ws.Commit(f.ctx, since, StepCommit{Role: "do", StepIndex: 2, Iteration: 1, ExpectChanges: true})
	require.NoError(t, err)
	require.True(t, res.Changed)

	logAfter, err := os.ReadFile(filepath.Join(admin, "logs", "HEAD"))
	require.NoError(t, err)
	assert.Equal(t, string(logBefore), string(logAfter), "git-norma's commit wrote the agent's reflog")
	assert.NoFileExists(t, filepath.Join(admin, "COMMIT_EDITMSG"), "git-norma's commit wrote its message there")
	assert.FileExists(t, filepath.Join(ws.ownDir, "COMMIT_EDITMSG"))
	assert.Equal(t, res.Commit, f.rev("refs/heads/norma/task/T-1"))
	// The agent's own git: on the branch, at the commit, nothing staged or changed.
	assert.Equal(t, res.Commit, f.gitIn(ws.Dir(), "rev-parse", "HEAD"))
	assert.Empty(t, f.gitIn(ws.Dir(), "status", "--porcelain"))
}

// TestDiscardPutsTheAgentBackOnItsBranch: a step that checked out something else is seen as a
// change, and Discard puts the agent's HEAD (and index) back on the task branch.
func TestDiscardPutsTheAgentBackOnItsBranch(t *testing.T) {
	f, ws := wsFixture(t)
	since := f.state(ws)
	f.gitIn(ws.Dir(), "checkout", "-q", "--detach")

	changes, err := ws.Changes(f.ctx, since)
	require.NoError(t, err)
	assert.Len(t, changes, 1)
	assert.Contains(t, changes[0], "HEAD: ")

	require.NoError(t, ws.Discard(f.ctx, since))
	assert.Equal(t, "refs/heads/norma/task/T-1", f.gitIn(ws.Dir(), "symbolic-ref", "HEAD"))
	assert.Empty(t, f.gitIn(ws.Dir(), "status", "--porcelain"))
	assert.Equal(t, since, f.state(ws))
}
