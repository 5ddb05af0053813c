package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/git-norma/git-norma/loop"
)

// The values of credential-looking variables go, whole and as JSON quotes them; other values,
// and values too short to be a secret, stay.
func TestRedactorRemovesCredentials(t *testing.T) {
	r := New([]string{
		"ANTHROPIC_API_KEY=sk-ant-123456789",
		"GITHUB_TOKEN=ghp_abcdefgh",
		"GITHUB_TOKEN_LONG=ghp_abcdefgh_and_more", // holds the other: replaced whole, not in part
		"DB_PASSWORD=pa\"ss\\word1",
		"SHORT_TOKEN=1234",
		"HOME=/home/someone-long-enough",
	})
	assert.Equal(t, "key [redacted], token [redacted], long [redacted]",
		r.Apply("key sk-ant-123456789, token ghp_abcdefgh, long ghp_abcdefgh_and_more"))
	assert.Equal(t, `{"pw":"[redacted]"} [redacted]`, r.Apply(`{"pw":"pa\"ss\\word1"} pa"ss\word1`))
	assert.Equal(t, "1234 in /home/someone-long-enough", r.Apply("1234 in /home/someone-long-enough"))
}

// A failure and a live report lose the secrets in every field that is shown beyond the run
// directory.
func TestRedactorCleansFailuresAndLiveReports(t *testing.T) {
	r := New([]string{"API_KEY=secret-value-1"})
	f := &loop.Failure{Summary: "s secret-value-1", Changes: "c secret-value-1",
		Failing: []loop.FailedCheck{{Cmd: "curl -H secret-value-1", OutputTail: "401 secret-value-1"}}}
	got := r.Failure(f)
	assert.Equal(t, "s [redacted]", got.Summary)
	assert.Equal(t, "c [redacted]", got.Changes)
	assert.Equal(t, "curl -H [redacted]", got.Failing[0].Cmd)
	assert.Equal(t, "401 [redacted]", got.Failing[0].OutputTail)
	assert.Equal(t, "curl -H secret-value-1", f.Failing[0].Cmd, "the run's own copy is left as it was")

	var seen loop.Live
	r.Live(func(l loop.Live) { seen = l })(loop.Live{Summary: "done with secret-value-1", Failure: f})
	assert.Equal(t, "done with [redacted]", seen.Summary)
	assert.Equal(t, "s [redacted]", seen.Failure.Summary)
	assert.Nil(t, r.Live(nil))
}
