package gitnorma

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/git-norma/git-norma/gitnorma/tracker"
)

func TestRelatedToAny(t *testing.T) {
	dep := func(on, typ string) tracker.DepHead { return tracker.DepHead{On: on, Type: typ} }
	all := []tracker.Head{
		{ID: "ep"},
		{ID: "ep.1", Parent: "ep"},
		{ID: "ep.1.1", Parent: "ep.1"},
		{ID: "ep.2", Parent: "ep"},
		{ID: "solo"},
		{ID: "after", Deps: []tracker.DepHead{dep("solo", "blocks")}},
		{ID: "loose", Deps: []tracker.DepHead{dep("solo", "related")}},
	}
	tests := []struct {
		id   string
		busy []string
		want bool
	}{
		{"ep.1.1", []string{"ep"}, true},    // a descendant of a busy task
		{"ep", []string{"ep.1.1"}, true},    // an ancestor of one
		{"ep.2", []string{"ep.1.1"}, false}, // cousins: no line between them
		{"after", []string{"solo"}, true},   // depends on a busy task
		{"solo", []string{"after"}, true},   // blocks one
		{"loose", []string{"solo"}, true},   // any dependency record counts
		{"solo", []string{"ep.2", "ep.1"}, false},
		{"solo", nil, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.id, tt.busy), func(t *testing.T) {
			assert.Equal(t, tt.want, relatedToAny(tt.busy, all)(tt.id))
		})
	}
}

// A task claimed by someone else between selection and the run's claim is a lost claim
// (loop goes on), however the run found out: bd's refusal, or the task read as in progress.
func TestClaimLostIsRecognised(t *testing.T) {
	err := error(&Error{Err: lostClaim{fmt.Errorf("task x is in_progress (claimed by another run or person)")}})
	assert.ErrorIs(t, err, ErrClaimLost)
	assert.Equal(t, "task x is in_progress (claimed by another run or person)", err.(*Error).Err.Error())
	assert.NotErrorIs(t, failf("hint", "task x is closed"), ErrClaimLost)
}
