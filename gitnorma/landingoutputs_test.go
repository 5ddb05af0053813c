package gitnorma

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/loop"
)

// The outputs synced at a run's end are the ones a landing reads: the last step that carried
// a plan and the last that carried a check verdict, whatever failed after them.
func TestLandingOutputsAreTheLastPlanAndCheck(t *testing.T) {
	steps := t.TempDir()
	step := func(name string, out loop.Output) loop.StepRecord {
		dir := filepath.Join(steps, name)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "output.json"), []byte("{}\n"), 0o600))
		return loop.StepRecord{Dir: dir, Output: out}
	}
	var o landingOutputs
	for _, rec := range []loop.StepRecord{
		step("001-plan", loop.Output{Plan: &loop.Plan{}}),
		step("002-do", loop.Output{}),
		step("003-check", loop.Output{Check: &loop.Check{}}),
		step("004-act", loop.Output{}),
		step("005-plan", loop.Output{Plan: &loop.Plan{}}),
		step("006-do", loop.Output{}),
		step("007-check", loop.Output{Status: loop.StatusError}), // a failed check: no verdict
	} {
		o.note(rec)
	}
	assert.Equal(t, filepath.Join(steps, "005-plan", "output.json"), o.plan)
	assert.Equal(t, filepath.Join(steps, "003-check", "output.json"), o.check)
	require.NoError(t, o.sync())

	// sync really opens what it names: a file gone is an error, not a silent success, and the
	// other file is still synced.
	require.NoError(t, os.Remove(o.plan))
	err := o.sync()
	assert.ErrorContains(t, err, "005-plan")
	assert.NotContains(t, err.Error(), "003-check")

	var none landingOutputs
	assert.NoError(t, none.sync(), "a run that never planned has nothing to sync")
}
