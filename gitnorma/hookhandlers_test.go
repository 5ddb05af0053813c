package gitnorma

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A branch reflog entry is the task's own commit unless it records the branch moving onto a
// commit made elsewhere.
func TestMadeThere(t *testing.T) {
	for msg, want := range map[string]bool{
		"commit: a wrong attempt":                              true,
		"commit (amend): fix":                                  true,
		"commit (merge): Merge branch 'main'":                  true,
		"merge main: Merge made by the 'ort' strategy.":        true,
		"norma: catch up with main":                            true,
		"rebase (finish): refs/heads/norma/task/x onto 1234":   true,
		"cherry-pick: a fix":                                   true,
		"":                                                     true, // an update-ref without a message: not known to come from elsewhere
		"branch: Created from refs/heads/main":                 false,
		"branch: Created from HEAD":                            false,
		"branch: Reset to main":                                false,
		"reset: moving to HEAD~1":                              false,
		"merge main: Fast-forward":                             false,
		"pull: Fast-forward":                                   false,
		"fetch origin norma/task/x:norma/task/x: fast-forward": false,
		"norma: restart from main":                             false,
	} {
		assert.Equal(t, want, madeThere(msg), msg)
	}
}

// Only an orchestrator step commit (Norma-Task and Norma-Role) names its task; a landing
// commit (no Norma-Role) and a plain commit do not.
func TestStepCommitTask(t *testing.T) {
	assert.Equal(t, "norma-ab12", stepCommitTask("Norma-Task: norma-ab12\x1fNorma-Role: do"))
	assert.Equal(t, "norma-ab12", stepCommitTask("norma-role: act\x1fnorma-task: norma-ab12"))
	assert.Equal(t, "", stepCommitTask("Norma-Task: norma-ab12"), "a landing commit")
	assert.Equal(t, "", stepCommitTask(""))
}
