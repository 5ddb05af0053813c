package loop

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"
)

// tailBytes is how much of a check's output is kept as evidence (the full output stays in the
// step's log file).
const tailBytes = 2048

// checkRun is what running one distinct command produced.
type checkRun struct {
	res    ProcessResult
	tail   string
	offset int64
}

// RunChecks runs every check of every effective criterion in workDir with `sh -c` — the only
// place git-norma uses a shell, because these are the user's own commands — each bounded by
// timeout, and appends their combined output to log. A command shared by several criteria
// runs once. logRef is how evidence refers to the log (relative to the run dir); env is what
// the commands' environment starts from (see Options.Env).
func RunChecks(ctx context.Context, workDir string, effective []EffectiveCriterion, log *os.File, logRef string, timeout time.Duration, env []string) ([]Evidence, error) {
	var evidence []Evidence
	ran := map[string]checkRun{}
	for _, ac := range effective {
		for _, c := range ac.Checks {
			r, ok := ran[c.Cmd]
			if !ok {
				var err error
				if r, err = runCheck(ctx, workDir, c, log, timeout, env); err != nil {
					return evidence, err
				}
				ran[c.Cmd] = r
			}
			expect := c.ExpectExitCodes
			if len(expect) == 0 {
				expect = []int{0}
			}
			evidence = append(evidence, Evidence{
				CheckID: c.ID, ACID: ac.ID, Cmd: c.Cmd,
				ExitCode:   r.res.ExitCode,
				Passed:     !r.res.TimedOut && slices.Contains(expect, r.res.ExitCode),
				TimedOut:   r.res.TimedOut,
				DurationMS: r.res.Duration.Milliseconds(),
				OutputTail: r.tail,
				LogRef:     fmt.Sprintf("%s#offset=%d", logRef, r.offset),
			})
		}
	}
	return evidence, nil
}

func runCheck(ctx context.Context, workDir string, c CheckSpec, log *os.File, timeout time.Duration, env []string) (checkRun, error) {
	if _, err := fmt.Fprintf(log, "==> %s: %s\n", c.ID, c.Cmd); err != nil {
		return checkRun{}, err
	}
	start, err := log.Seek(0, io.SeekCurrent)
	if err != nil {
		return checkRun{}, err
	}
	cmd := exec.Command("sh", "-c", c.Cmd)
	cmd.Dir = workDir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = append(BaseEnv(env), CeilingEnv(workDir))
	res, err := RunProcess(ctx, cmd, timeout)
	if err != nil {
		return checkRun{}, err
	}
	tail, err := readTail(log, start)
	if err != nil {
		return checkRun{}, err
	}
	status := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		status = fmt.Sprintf("timed out after %s, killed", timeout)
	}
	if _, err := fmt.Fprintf(log, "\n<== %s: %s in %s\n", c.ID, status, res.Duration.Round(time.Millisecond)); err != nil {
		return checkRun{}, err
	}
	return checkRun{res: res, tail: tail, offset: start}, nil
}

// readTail returns up to tailBytes of f written since offset start, leaving f at its end.
func readTail(f *os.File, start int64) (string, error) {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	from := max(start, end-tailBytes)
	buf := make([]byte, end-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return "", err
	}
	return string(buf), nil
}

// EventCheckConfirmed is the event of checks that passed in a check worktree holding what
// earlier commands left there, and were run again in a fresh one.
const EventCheckConfirmed = "check_confirmed_fresh"

// VerifyTree runs the checks (run, under ctx) where bring puts the commit and, when they all
// pass with what earlier check or setup commands left — files in the check worktree, or the
// checks' shared cache home (checksCache), before or while they ran (a parallel run's
// checks write it too) — once more in a fresh worktree with an empty cache home: those
// commands ran the code of earlier commits or other tasks, which agents wrote, so only a PASS
// that needs none of it counts. The evidence is the last run's; confirmed says there were two.
func VerifyTree(ctx context.Context, bring func(fresh bool) (CheckTree, error), run func(ctx context.Context, dir string) ([]Evidence, error)) (ct CheckTree, evidence []Evidence, confirmed bool, err error) {
	cachedBefore, changedBefore := checksCache(ctx)
	if ct, err = bring(false); err != nil {
		return ct, nil, false, err
	}
	evidence, err = run(ctx, ct.Dir)
	cachedAfter, changedAfter := checksCache(ctx)
	cached := cachedBefore || cachedAfter || changedAfter != changedBefore
	if err != nil || !(ct.Leftovers || cached) || !allPassed(evidence) {
		return ct, evidence, false, err
	}
	if ct, err = bring(true); err != nil {
		return ct, nil, true, err
	}
	evidence, err = run(FreshCaches(ctx), ct.Dir)
	return ct, evidence, true, err
}

func allPassed(evidence []Evidence) bool {
	return len(evidence) > 0 && !slices.ContainsFunc(evidence, func(e Evidence) bool { return !e.Passed })
}
