package gitnorma

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/git-norma/git-norma/gitnorma/tracker"
)

func TestRelatedToAny(t *testing.T) {
	dep := func(issue, on, typ string) tracker.Dependency {
		return tracker.Dependency{IssueID: issue, DependsOnID: on, Type: typ}
	}
	all := []tracker.Task{
		{ID: "ep"},
		{ID: "ep.1", Parent: "ep"},
		{ID: "ep.1.1", Parent: "ep.1"},
		{ID: "ep.2", Parent: "ep"},
		{ID: "solo"},
		{ID: "after", Dependencies: []tracker.Dependency{dep("after", "solo", "blocks")}},
		{ID: "loose", Dependencies: []tracker.Dependency{dep("loose", "solo", "related")}},
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
			assert.Equal(t, tt.want, relatedToAny(tt.id, tt.busy, all))
		})
	}
}

func TestPrefixWriterKeepsLinesWhole(t *testing.T) {
	var out lockedBuffer
	a, b := newPrefixWriter(&out, "[a] "), newPrefixWriter(&out, "[b] ")
	var wg sync.WaitGroup
	for _, w := range []*prefixWriter{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				fmt.Fprintf(w, "line %d ", i) // a line in two writes
				fmt.Fprintf(w, "end\n")
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Len(t, lines, 400)
	for _, l := range lines {
		assert.Regexp(t, `^\[[ab]\] line \d+ end$`, l)
	}
}

// lockedBuffer is the terminal: one write at a time.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
