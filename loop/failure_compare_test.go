package loop

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFailureSameSetsAsideTimesAndIds(t *testing.T) {
	f := func(exit int, tail string) Failure {
		return Failure{Verdict: VerdictFail, Failing: []FailedCheck{{CheckID: "C1", Cmd: "go test ./...", ExitCode: exit, OutputTail: tail}}}
	}
	a := f(1, "--- FAIL: TestX (0.01s)\nFAIL\tpkg\t0.012s\nat 2026-11-24T21:40:01Z in /tmp/git-norma-step-123/tmp/x, commit 3f2a9c1d")
	b := f(1, "--- FAIL: TestX (0.02s)\nFAIL\tpkg\t0.015s\nat 2026-11-24T21:41:07Z in /tmp/git-norma-step-987/tmp/x, commit 9e8d7c6b")
	assert.True(t, a.Same(b), "durations, times, temporary dirs and ids differ only")
	assert.False(t, a.Same(f(2, a.Failing[0].OutputTail)), "another exit code")
	assert.False(t, a.Same(f(1, "--- FAIL: TestY (0.01s)")), "another test fails")
	assert.False(t, Failure{Verdict: VerdictFail}.Same(Failure{Verdict: VerdictFail}), "no failing check: a plan mismatch, never progress-free by this rule")
}

func TestFailureChangesFrom(t *testing.T) {
	prev := Failure{Failing: []FailedCheck{
		{CheckID: "C1", Cmd: "make test", ExitCode: 1, OutputTail: "ok a\nexpected 3, got 1\n"},
		{CheckID: "C2", Cmd: "make lint", ExitCode: 1, OutputTail: "lint error\n"},
	}}
	now := Failure{Failing: []FailedCheck{
		{CheckID: "C1", Cmd: "make test", ExitCode: 2, OutputTail: "ok a\nexpected 3, got 2\n"},
		{CheckID: "C3", Cmd: "make vet", ExitCode: 1, OutputTail: "vet error\n"},
	}}
	assert.Equal(t, "C1: exit 2, was 1\nC1: - expected 3, got 1\nC1: + expected 3, got 2\n"+
		"C3 fails now (exit 1): `make vet`\nC2 passes now: `make lint`", now.ChangesFrom(prev))
}

func TestFailedCheckTail(t *testing.T) {
	c := FailedCheck{OutputTail: "a\nb\nc\n"}
	assert.Equal(t, []string{"b", "c"}, c.Tail(2))
	assert.Equal(t, []string{"a", "b", "c"}, c.Tail(10))
	assert.Empty(t, FailedCheck{}.Tail(3))
}
