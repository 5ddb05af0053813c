package loop

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeMinimalDoOutputIsValid: the Do output the README shows agent authors is one the
// orchestrator accepts.
func TestReadmeMinimalDoOutputIsValid(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "A minimal Do output:")
	require.True(t, ok, "the README shows a minimal Do output")
	_, block, ok := strings.Cut(after, "```json\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	var out Output
	require.NoError(t, json.Unmarshal([]byte(block), &out))
	require.NoError(t, ValidateOutput(RoleDo, "norma-t1", &out))
}
