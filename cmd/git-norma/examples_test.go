package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubernetesWorkerFailsOnlyOnItsOwnFailure runs the worker script of the Kubernetes
// example with a git whose `norma loop` exits as given: a task's outcome (1–3) must not fail
// the pod, which with backoffLimit: 0 fails the Job and kills the other workers mid-run.
func TestKubernetesWorkerFailsOnlyOnItsOwnFailure(t *testing.T) {
	data, err := os.ReadFile("../../examples/kubernetes/norma-workers-job.yaml")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(data), "            - |\n")
	require.True(t, ok, "the container's script is the args block")
	var script strings.Builder
	for _, line := range strings.Split(block, "\n") {
		if !strings.HasPrefix(line, "              ") && strings.TrimSpace(line) != "" {
			break
		}
		script.WriteString(strings.TrimPrefix(line, "              ") + "\n")
	}
	require.Contains(t, script.String(), "git norma loop --worker")
	bin := t.TempDir()
	// git stands in for every git and git-norma call; `git norma loop` exits $LOOP_EXIT.
	fake := "#!/bin/sh\nif [ \"$1 $2\" = 'norma loop' ]; then exit \"$LOOP_EXIT\"; fi\nexit 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte(fake), 0o755))
	for loopExit, podExit := range map[int]int{0: 0, 1: 0, 2: 0, 3: 0, 128: 128, 130: 130} {
		cmd := exec.Command("/bin/sh", "-ec", strings.ReplaceAll(script.String(), "cd /work", "cd "+t.TempDir()))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "LOOP_EXIT="+strconv.Itoa(loopExit))
		err := cmd.Run()
		var ee *exec.ExitError
		got := 0
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, podExit, got, "git norma loop exited %d", loopExit)
	}
}
