package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/git/gittest"
)

func TestInternal(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want bool
	}{
		{"unset", []string{"HOME=/x"}, false},
		{"set", []string{"HOME=/x", GuardEnv}, true},
		{"zero", []string{GuardVar + "=0"}, false},
		{"empty", []string{GuardVar + "="}, false},
		{"prefix only", []string{GuardVar + "X=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Internal(tc.env)) })
	}
}

// A git process started with GuardEnv passes it to the hooks git runs, which is what lets a
// hook recognise git-norma's own commits.
func TestGuardReachesHooks(t *testing.T) {
	repo := gittest.NewRepo(t)
	hook := filepath.Join(repo.Dir, ".git", "hooks", "post-commit")
	seen := filepath.Join(repo.Dir, ".git", "seen")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho \"${"+GuardVar+":-unset}\" >> "+seen+"\n"), 0o755))

	repo.WriteFile("a.txt", "a")
	repo.Commit("by a human")
	internal := git.Runner{Dir: repo.Dir, Env: []string{GuardEnv}}
	repo.WriteFile("b.txt", "b")
	require.NoError(t, internal.Run(context.Background(), "add", "-A"))
	require.NoError(t, internal.Run(context.Background(), "commit", "-q", "-m", "by git-norma"))

	data, err := os.ReadFile(seen)
	require.NoError(t, err)
	assert.Equal(t, []string{"unset", "1"}, strings.Fields(string(data)))
}
