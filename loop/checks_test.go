package loop

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkLog opens a log file the way the engine opens logs/stdout.txt.
func checkLog(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "stdout.txt"), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func oneCheck(cmd string, expect ...int) []EffectiveCriterion {
	return []EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-1", Cmd: cmd, ExpectExitCodes: expect}}}}
}

func TestRunChecksExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		expect   []int
		wantCode int
		wantPass bool
	}{
		{name: "exit 0 passes", cmd: "true", wantCode: 0, wantPass: true},
		{name: "exit 1 fails by default", cmd: "exit 1", wantCode: 1, wantPass: false},
		{name: "explicit [0] fails on 3", cmd: "exit 3", expect: []int{0}, wantCode: 3, wantPass: false},
		{name: "expected non-zero exit passes", cmd: "exit 3", expect: []int{3}, wantCode: 3, wantPass: true},
		{name: "one of several expected codes", cmd: "exit 2", expect: []int{0, 1, 2}, wantCode: 2, wantPass: true},
		{name: "exit 0 not expected fails", cmd: "true", expect: []int{1}, wantCode: 0, wantPass: false},
		{name: "command not found is 127", cmd: "norma-no-such-command-xyz", wantCode: 127, wantPass: false},
		{name: "shell syntax works", cmd: `test "$(echo a,b | cut -d, -f2)" = b && [ -d . ]`, wantCode: 0, wantPass: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := RunChecks(stepCtx(t), Checks{Dir: t.TempDir(), Log: checkLog(t), LogRef: "steps/003-check/logs/stdout.txt", Timeout: 10 * time.Second}, oneCheck(tc.cmd, tc.expect...))
			require.NoError(t, err)
			require.Len(t, ev, 1)
			e := ev[0]
			assert.Equal(t, "AC-1", e.ACID)
			assert.Equal(t, "CHK-1", e.CheckID)
			assert.Equal(t, tc.cmd, e.Cmd)
			assert.Equal(t, tc.wantCode, e.ExitCode)
			assert.Equal(t, tc.wantPass, e.Passed)
			assert.False(t, e.TimedOut)
			assert.True(t, strings.HasPrefix(e.LogRef, "steps/003-check/logs/stdout.txt#offset="), e.LogRef)
		})
	}
}

// The commands start from the environment the application gives (without a hook's GIT_DIR),
// not from this process's.
func TestRunChecksRunsInWorkDirWithTheGivenEnv(t *testing.T) {
	t.Setenv("GIT_DIR", "/somewhere/else/.git")
	t.Setenv("GIT_INDEX_FILE", "/somewhere/else/index")
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "marker"), nil, 0o600))
	env := []string{"PATH=" + os.Getenv("PATH"), "GIVEN=yes"}
	ev, err := RunChecks(stepCtx(t), Checks{Dir: work, Log: checkLog(t), LogRef: "log", Timeout: 10 * time.Second, Env: env},
		oneCheck(`test -f marker && test -z "$GIT_DIR" && test -z "$GIT_INDEX_FILE" && test "$GIVEN" = yes`))
	require.NoError(t, err)
	require.Len(t, ev, 1)
	assert.True(t, ev[0].Passed, "exit %d: %s", ev[0].ExitCode, ev[0].OutputTail)
}

func TestRunChecksTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	work := t.TempDir()
	start := time.Now()
	ev, err := RunChecks(stepCtx(t), Checks{Dir: work, Log: checkLog(t), LogRef: "log", Timeout: timeout}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-SLOW", Cmd: "echo started; sleep 30 & echo $! > child.pid; wait"}}},
		{ID: "AC-2", Checks: []CheckSpec{{ID: "CHK-FAST", Cmd: "true"}}},
	})
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.Len(t, ev, 2)
	assert.True(t, ev[0].TimedOut)
	assert.False(t, ev[0].Passed)
	assert.Contains(t, ev[0].OutputTail, "started")
	assert.GreaterOrEqual(t, ev[0].DurationMS, timeout.Milliseconds())
	assert.True(t, ev[1].Passed, "the next check still runs")
	assert.Less(t, elapsed, timeout+3*time.Second)
	requireGone(t, "check's background child", readPID(t, filepath.Join(work, "child.pid")))

	results := ResultsFromEvidence([]EffectiveCriterion{{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-SLOW"}}}}, ev)
	assert.Equal(t, VerdictFail, results[0].Result)
	assert.Contains(t, results[0].Notes, "timed out")
}

func TestRunChecksOutputTailAndLog(t *testing.T) {
	log := checkLog(t)
	big := strings.Repeat("x", 5000)
	ev, err := RunChecks(stepCtx(t), Checks{Dir: t.TempDir(), Log: log, LogRef: "steps/003-check/logs/stdout.txt", Timeout: 10 * time.Second}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-1", Cmd: "echo hello; echo oops >&2"}}},
		{ID: "AC-2", Checks: []CheckSpec{{ID: "CHK-2", Cmd: "printf '%s' " + big + "; echo END; exit 4"}}},
	})
	require.NoError(t, err)
	require.Len(t, ev, 2)

	assert.Equal(t, "hello\noops\n", ev[0].OutputTail, "stdout and stderr both land in the tail")
	assert.Len(t, ev[1].OutputTail, tailBytes, "the tail is bounded")
	assert.True(t, strings.HasSuffix(ev[1].OutputTail, "xxxEND\n"), "the tail is the end of the output")
	assert.Equal(t, 4, ev[1].ExitCode)

	data, err := os.ReadFile(log.Name())
	require.NoError(t, err)
	text := string(data)
	assert.Contains(t, text, "==> CHK-1: echo hello; echo oops >&2\n")
	assert.Contains(t, text, "<== CHK-1: exit 0 in ")
	assert.Contains(t, text, "<== CHK-2: exit 4 in ")
	assert.Contains(t, text, big+"END\n", "the full output stays in the log")
	// Each LogRef points at the first byte of its command's output.
	for i, e := range ev {
		_, off, ok := strings.Cut(e.LogRef, "#offset=")
		require.True(t, ok, e.LogRef)
		n, err := strconv.Atoi(off)
		require.NoError(t, err)
		require.Less(t, n, len(text))
		want := []string{"hello\n", "xxx"}[i]
		assert.True(t, strings.HasPrefix(text[n:], want), "log at offset %d starts with %q", n, text[n:min(n+20, len(text))])
	}
}

func TestRunChecksSharedCommandRunsOnce(t *testing.T) {
	work := t.TempDir()
	shared := "echo run >> counter.txt; exit 2"
	ev, err := RunChecks(stepCtx(t), Checks{Dir: work, Log: checkLog(t), LogRef: "log", Timeout: 10 * time.Second}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-AC-1-1", Cmd: shared, ExpectExitCodes: []int{2}}, {ID: "CHK-AC-1-2", Cmd: "echo other >> counter.txt"}}},
		{ID: "AC-2", Checks: []CheckSpec{{ID: "CHK-AC-2-1", Cmd: shared}}},
	})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(work, "counter.txt"))
	require.NoError(t, err)
	assert.Equal(t, "run\nother\n", string(data), "the shared command ran exactly once")

	require.Len(t, ev, 3, "every check still gets its own evidence")
	assert.Equal(t, []string{"AC-1", "AC-1", "AC-2"}, []string{ev[0].ACID, ev[1].ACID, ev[2].ACID})
	assert.Equal(t, []string{"CHK-AC-1-1", "CHK-AC-1-2", "CHK-AC-2-1"}, []string{ev[0].CheckID, ev[1].CheckID, ev[2].CheckID})
	assert.Equal(t, 2, ev[0].ExitCode)
	assert.Equal(t, 2, ev[2].ExitCode)
	assert.True(t, ev[0].Passed, "exit 2 expected by CHK-AC-1-1")
	assert.False(t, ev[2].Passed, "exit 2 not expected by CHK-AC-2-1")
	assert.Equal(t, ev[0].LogRef, ev[2].LogRef, "both refer to the single run's output")
}

func TestRunChecksCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(stepCtx(t))
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	work := t.TempDir()
	start := time.Now()
	ev, err := RunChecks(ctx, Checks{Dir: work, Log: checkLog(t), LogRef: "log"}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-1", Cmd: "true"}}},
		{ID: "AC-2", Checks: []CheckSpec{{ID: "CHK-2", Cmd: "sleep 30 & echo $! > child.pid; wait"}}},
		{ID: "AC-3", Checks: []CheckSpec{{ID: "CHK-3", Cmd: "touch ran-after-cancel"}}},
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Len(t, ev, 1, "evidence gathered before the cancel is returned")
	assert.NoFileExists(t, filepath.Join(work, "ran-after-cancel"))
	requireGone(t, "check's background child", readPID(t, filepath.Join(work, "child.pid")))
}

// VerifyTree confirms a PASS in a fresh check worktree only when the first one held what
// earlier commands left there; a FAIL, or a PASS without leftovers, is run once.
func TestVerifyTreeConfirmsAPassThatMayHaveNeededLeftovers(t *testing.T) {
	for _, c := range []struct {
		name      string
		leftovers bool
		first     []bool // what the first run's checks give; a fresh run fails them all
		confirmed bool
		passed    bool
	}{
		{"pass on leftovers", true, []bool{true, true}, true, false},
		{"pass without leftovers", false, []bool{true}, false, true},
		{"fail on leftovers", true, []bool{true, false}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var brought []bool
			bring := func(fresh bool) (CheckTree, error) {
				brought = append(brought, fresh)
				return CheckTree{Dir: strconv.FormatBool(fresh), Tree: "t", Leftovers: c.leftovers && !fresh}, nil
			}
			run := func(_ context.Context, ct CheckTree) ([]Evidence, error) {
				var ev []Evidence
				for _, p := range c.first {
					ev = append(ev, Evidence{Passed: p && ct.Dir == "false"})
				}
				return ev, nil
			}
			ct, evidence, confirmed, err := VerifyTree(context.Background(), bring, run)
			require.NoError(t, err)
			assert.Equal(t, c.confirmed, confirmed)
			assert.Equal(t, c.passed, allPassed(evidence))
			assert.Equal(t, c.confirmed, ct.Dir == "true", "the evidence is the fresh run's when there were two")
			assert.Len(t, brought, map[bool]int{false: 1, true: 2}[c.confirmed])
		})
	}
}

// A PASS whose checks ran while another run's checks wrote the shared cache home — and took
// back what they wrote, leaving it empty again, its time set back — is confirmed in a fresh worktree with a
// cache home of its own: the other run's code could have prepared it (a red-team finding of
// loop --parallel). One that nothing touched meanwhile stands.
func TestVerifyTreeSeesTheCacheChangedWhileChecksRan(t *testing.T) {
	for _, meddle := range []bool{true, false} {
		t.Run(strconv.FormatBool(meddle), func(t *testing.T) {
			cache := t.TempDir()
			home := filepath.Join(cache, checkCacheDir)
			require.NoError(t, os.Mkdir(home, 0o700))
			s := &stepSandbox{cfg: &Sandbox{Landlock: true, CacheDir: cache}, private: &privateDir{}}
			ctx := withStepSandbox(context.Background(), s)
			bring := func(fresh bool) (CheckTree, error) { return CheckTree{Dir: strconv.FormatBool(fresh)}, nil }
			run := func(_ context.Context, ct CheckTree) ([]Evidence, error) {
				if meddle && ct.Dir == "false" {
					// ... and sets the home's time back (Landlock does not govern utimensat).
					st, err := os.Stat(home)
					require.NoError(t, err)
					planted := filepath.Join(home, "b-ok")
					time.Sleep(10 * time.Millisecond) // a later time than the home's own
					require.NoError(t, os.WriteFile(planted, nil, 0o600))
					require.NoError(t, os.Remove(planted))
					require.NoError(t, os.Chtimes(home, st.ModTime(), st.ModTime()))
				}
				return []Evidence{{Passed: true}}, nil
			}
			_, _, confirmed, err := VerifyTree(ctx, bring, run)
			require.NoError(t, err)
			assert.Equal(t, meddle, confirmed)
		})
	}
}

// A command that changes the tree it checks fails, whatever its exit code, and says which
// files; the tree is put back before the next command, whose evidence stands on its own.
func TestRunChecksFailsACommandThatChangesTheTree(t *testing.T) {
	work := t.TempDir()
	co := &fakeCheckout{dir: work}
	ev, err := RunChecks(stepCtx(t), Checks{Dir: work, Log: checkLog(t), LogRef: "log", Timeout: 10 * time.Second, Checkout: co}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-1", Cmd: "touch a.go b.go"}, {ID: "CHK-2", Cmd: "true"}}},
	})
	require.NoError(t, err)
	require.Len(t, ev, 2)
	assert.False(t, ev[0].Passed)
	assert.Equal(t, 0, ev[0].ExitCode)
	assert.Contains(t, ev[0].OutputTail, "CHK-1 changed the tree it checks (a.go, b.go)")
	assert.True(t, ev[1].Passed)
	assert.Equal(t, 1, co.restored)
}

// fakeCheckout reports the files of dir but the ones a checkout starts with (always, which
// differ as git's renormalised ones do, and are reported each time), and removes them on
// Restore; always are files of dir, put back as they were first seen.
type fakeCheckout struct {
	dir      string
	always   []string
	kept     map[string][]byte
	restored int
}

func (f *fakeCheckout) Changes(context.Context) ([]string, error) {
	entries, err := os.ReadDir(f.dir)
	paths := slices.Clone(f.always)
	for _, e := range entries {
		if !slices.Contains(f.always, e.Name()) {
			paths = append(paths, e.Name())
		}
	}
	if f.kept == nil {
		f.kept = map[string][]byte{}
		for _, p := range f.always {
			f.kept[p], _ = os.ReadFile(filepath.Join(f.dir, p))
		}
	}
	return paths, err
}

func (f *fakeCheckout) Restore(context.Context) error {
	f.restored++
	entries, _ := os.ReadDir(f.dir)
	for _, e := range entries {
		if data, ok := f.kept[e.Name()]; ok {
			if err := os.WriteFile(filepath.Join(f.dir, e.Name()), data, 0o644); err != nil {
				return err
			}
			continue
		}
		if err := os.Remove(filepath.Join(f.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// A file that differed before any command ran (git's renormalisation, which no command did)
// is left out only while it stays as it was: a command that rewrites it changes what the
// next one checks as much as one that rewrites any other file.
func TestRunChecksFailsACommandThatChangesAFileDifferingBefore(t *testing.T) {
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "app.conf"), []byte("port=80\r\n"), 0o644))
	co := &fakeCheckout{dir: work, always: []string{"app.conf"}}
	ev, err := RunChecks(stepCtx(t), Checks{Dir: work, Log: checkLog(t), LogRef: "log", Timeout: 10 * time.Second, Checkout: co}, []EffectiveCriterion{
		{ID: "AC-1", Checks: []CheckSpec{{ID: "CHK-1", Cmd: "touch app.conf"}, {ID: "CHK-2", Cmd: "printf 'port=8080\\r\\n' > app.conf"}, {ID: "CHK-3", Cmd: "true"}}},
	})
	require.NoError(t, err)
	require.Len(t, ev, 3)
	assert.True(t, ev[0].Passed, "the same bytes: %s", ev[0].OutputTail)
	assert.False(t, ev[1].Passed)
	assert.Contains(t, ev[1].OutputTail, "CHK-2 changed the tree it checks (app.conf)")
	assert.True(t, ev[2].Passed, ev[2].OutputTail)
}
