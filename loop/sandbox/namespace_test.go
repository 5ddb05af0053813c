package sandbox

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noneLeftEnv marks the copy of this test that runs in a user namespace with no pid
// namespace left to make.
const noneLeftEnv = "NORMA_TEST_NO_NAMESPACE_LEFT"

// TestNamespacesWithNoneLeft: a kernel that gives namespaces but has none left for this user
// (another process of the user holds them all) is an error, not the "no" of a kernel that
// forbids them: the weaker containment without a namespace must not be a state a process can
// force on the next run. The test runs a copy of itself in a user namespace whose
// max_pid_namespaces is 0.
func TestNamespacesWithNoneLeft(t *testing.T) {
	if os.Getenv(noneLeftEnv) != "" {
		require.NoError(t, os.WriteFile("/proc/sys/user/max_pid_namespaces", []byte("0"), 0))
		ok, _, err := Namespaces("/bin/true") // clone itself fails: the launcher never runs
		assert.False(t, ok)
		assert.ErrorIs(t, err, ErrNoNamespaceLeft)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNamespacesWithNoneLeft$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), noneLeftEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}}
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Skip("no user namespace here: ", err)
	}
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestNamespacesWithNoneLeft")
}

// TestNamespacesOnlyARefusalIsANo: the probe's own "no" (exit 1: a mount refused) lets the
// launcher go without namespaces; a probe that failed otherwise (a Go program that could not
// start its threads exits 2) is an error — another process of the user may have used up what
// it needed, to force the weaker containment on this run.
func TestNamespacesOnlyARefusalIsANo(t *testing.T) {
	if ok, why, err := Namespaces("/bin/true"); !ok && err == nil {
		t.Skip("no namespaces here: " + why)
	}
	dir := t.TempDir()
	probe := func(code string) (bool, string, error) {
		path := dir + "/probe" + code
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho said "+code+"\nexit "+code+"\n"), 0o755))
		return Namespaces(path)
	}
	ok, why, err := probe("1")
	assert.False(t, ok)
	assert.Equal(t, "said 1", why)
	assert.NoError(t, err)
	ok, _, err = probe("2")
	assert.False(t, ok)
	assert.ErrorIs(t, err, ErrNoNamespaceLeft)
}
