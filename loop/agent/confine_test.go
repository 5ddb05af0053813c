package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// TestMain lets the test binary act as the sandbox launcher, as git-norma's own binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.Entry {
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// confined is a context whose processes start through the launcher, confined by Landlock to
// the step directory, their own directory and allowWrite.
func confined(t *testing.T, stepDir string, allowWrite ...string) context.Context {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, done := loop.ConfineChecks(context.Background(), &loop.Sandbox{Launcher: exe, Landlock: true, Network: true, AllowWrite: allowWrite}, stepDir)
	t.Cleanup(func() { done() })
	return ctx
}

// contained is a context whose processes start through the launcher, as with sandbox mode off.
func contained(t *testing.T, stepDir string) context.Context {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	ctx, done := loop.ConfineChecks(context.Background(), &loop.Sandbox{Launcher: exe, Network: true}, stepDir)
	t.Cleanup(func() { done() })
	return ctx
}

// TestCLIAgentsRunConfined: each of the four CLIs works confined when its state directory (the
// fake's log) is in allow_write, and cannot write it when it is not.
func TestCLIAgentsRunConfined(t *testing.T) {
	if abi, why := sandbox.ABI(); abi == 0 {
		t.Skip("the kernel cannot confine: " + why)
	}
	// Not parallel: the launcher is this whole test binary, and eight of its starts at once
	// would crowd the timing-bound tests (TestCLIAgentTimeoutKillsTheGroup gives 300 ms).
	for _, kind := range CLIKinds {
		t.Run(kind, func(t *testing.T) {
			r := newCLIRig(t, loop.RoleDo, 10*time.Second)
			fake := newFakeCLI(t, kind)
			a := fake.agent(t, loop.RoleDo, CLIOptions{}, kind+"/do-ok")

			ctx := confined(t, r.stepDir, filepath.Dir(fake.log))
			_, err := a.Run(ctx, r.req)
			require.NoError(t, err)
			calls := fake.calls(t)
			require.Len(t, calls, 1)

			// the fake goes on after a failed write, but its log stays as it was
			ctx = confined(t, r.stepDir)
			_, _ = a.Run(ctx, r.req)
			assert.Contains(t, r.log(t, "stderr.txt"), "Permission denied")
			assert.Len(t, fake.calls(t), 1, "without allow_write the fake cannot write its state")
		})
	}
}
