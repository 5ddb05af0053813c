package loop

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// changed says what it changed of the tree it checks ("" for nothing; see Checks.Checkout).
	changed string
}

// Checks says where RunChecks runs the commands and where their output goes.
type Checks struct {
	// Dir is where the commands run.
	Dir string
	// Log gets their combined output; LogRef is how evidence refers to it (relative to the run
	// dir).
	Log    *os.File
	LogRef string
	// Timeout bounds each command.
	Timeout time.Duration
	// Env is what the commands' environment starts from (see Options.Env).
	Env []string
	// Checkout, when set, is the commit checked out in Dir, which is what lands: it is asked
	// after each command whether the tree still holds it.
	Checkout Checkout
}

// Checkout is a commit checked out in a worktree of git-norma's (a check or scratch worktree).
type Checkout interface {
	// Changes lists the tracked files that differ from the commit.
	Changes(ctx context.Context) ([]string, error)
	// Restore puts the tree back as the commit has it.
	Restore(ctx context.Context) error
}

// RunChecks runs every check of every effective criterion in c.Dir with `sh -c` — the only
// place git-norma uses a shell, because these are the user's own commands — each bounded by
// c.Timeout, and appends their combined output to c.Log. A command shared by several criteria
// runs once. A command that changes the tree it checks (c.Checkout) fails, and the tree is put
// back: the commands after it would check another tree than the one that lands, and what a
// formatter or generator run by a check changed is not in what lands.
func RunChecks(ctx context.Context, c Checks, effective []EffectiveCriterion) ([]Evidence, error) {
	var evidence []Evidence
	ran := map[string]checkRun{}
	var unsettled map[string]string
	if c.Checkout != nil {
		// What differs already before any command ran is git's, not theirs: a file committed
		// with mixed line endings that .gitattributes now converts reads as changed right after
		// checkout. It is left out only as it is then (its fingerprint): a command that
		// rewrites it changes it all the same.
		paths, err := c.Checkout.Changes(ctx)
		if err != nil {
			return nil, err
		}
		unsettled = map[string]string{}
		for _, p := range paths {
			unsettled[p] = fingerprint(c.Dir, p)
		}
	}
	for _, ac := range effective {
		for _, spec := range ac.Checks {
			r, ok := ran[spec.Cmd]
			if !ok {
				var err error
				if r, err = runCheck(ctx, c, spec, unsettled); err != nil {
					return evidence, err
				}
				ran[spec.Cmd] = r
			}
			expect := spec.ExpectExitCodes
			if len(expect) == 0 {
				expect = []int{0}
			}
			evidence = append(evidence, Evidence{
				CheckID: spec.ID, ACID: ac.ID, Cmd: spec.Cmd,
				ExitCode:   r.res.ExitCode,
				Passed:     !r.res.TimedOut && r.changed == "" && slices.Contains(expect, r.res.ExitCode),
				TimedOut:   r.res.TimedOut,
				DurationMS: r.res.Duration.Milliseconds(),
				OutputTail: r.tail,
				LogRef:     fmt.Sprintf("%s#offset=%d", c.LogRef, r.offset),
			})
		}
	}
	return evidence, nil
}

func runCheck(ctx context.Context, c Checks, spec CheckSpec, unsettled map[string]string) (checkRun, error) {
	if _, err := fmt.Fprintf(c.Log, "==> %s: %s\n", spec.ID, spec.Cmd); err != nil {
		return checkRun{}, err
	}
	start, err := c.Log.Seek(0, io.SeekCurrent)
	if err != nil {
		return checkRun{}, err
	}
	cmd := exec.Command("sh", "-c", spec.Cmd)
	cmd.Dir = c.Dir
	cmd.Stdout = c.Log
	cmd.Stderr = c.Log
	cmd.Env = append(BaseEnv(c.Env), CeilingEnv(c.Dir))
	res, err := RunProcess(ctx, cmd, c.Timeout)
	if err != nil {
		return checkRun{}, err
	}
	changed, err := changedBy(ctx, c, unsettled)
	if err != nil {
		return checkRun{}, err
	}
	if changed != "" {
		if _, err := fmt.Fprintf(c.Log, "\ngit-norma: %s changed the tree it checks (%s): what lands is the commit as it is, so this fails (commit the change, or write elsewhere); put back for the next check\n",
			spec.ID, changed); err != nil {
			return checkRun{}, err
		}
	}
	tail, err := readTail(c.Log, start)
	if err != nil {
		return checkRun{}, err
	}
	status := fmt.Sprintf("exit %d", res.ExitCode)
	switch {
	case res.TimedOut:
		status = fmt.Sprintf("timed out after %s, killed", c.Timeout)
	case changed != "":
		status += ", changed the tree"
	}
	if _, err := fmt.Fprintf(c.Log, "\n<== %s: %s in %s\n", spec.ID, status, res.Duration.Round(time.Millisecond)); err != nil {
		return checkRun{}, err
	}
	return checkRun{res: res, tail: tail, offset: start, changed: changed}, nil
}

// changedBy says what the command just run changed of the tree c.Checkout holds — tracked
// files but those in unsettled, as long as they are as they were — and puts the tree back (""
// when nothing, or no checkout to compare). A tree git can no longer read (the command broke
// its .git link) counts as changed; only an interruption is an error.
func changedBy(ctx context.Context, c Checks, unsettled map[string]string) (string, error) {
	co := c.Checkout
	if co == nil {
		return "", nil
	}
	paths, err := co.Changes(ctx)
	if err == nil {
		if paths = slices.DeleteFunc(paths, func(p string) bool {
			was, ok := unsettled[p]
			return ok && fingerprint(c.Dir, p) == was
		}); len(paths) == 0 {
			return "", nil
		}
		err = co.Restore(ctx)
		for p := range unsettled { // as the checkout writes them again
			unsettled[p] = fingerprint(c.Dir, p)
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("git could not compare it with the commit: %s", OneLine(err.Error(), 200)), nil
	}
	return strings.Join(paths, ", "), nil
}

// fingerprint tells the file at path in dir from any other content, mode or kind of file.
func fingerprint(dir, path string) string {
	name := filepath.Join(dir, path)
	st, err := os.Lstat(name)
	if err != nil {
		return "absent"
	}
	h := sha256.New()
	switch {
	case st.Mode().IsRegular(): // not a pipe, which would hold the read for ever
		f, err := os.Open(name)
		if err != nil {
			return "unreadable"
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "unreadable"
		}
	case st.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(name)
		h.Write([]byte(target))
	}
	return fmt.Sprintf("%s %x", st.Mode(), h.Sum(nil))
}

// readTail returns up to tailBytes of f written since offset start, leaving f at its end.
func readTail(f *os.File, start int64) (string, error) {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	// The command may have truncated the log (ftruncate on its stdout): nothing is past end.
	from := min(max(start, end-tailBytes), end)
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
func VerifyTree(ctx context.Context, bring func(fresh bool) (CheckTree, error), run func(ctx context.Context, ct CheckTree) ([]Evidence, error)) (ct CheckTree, evidence []Evidence, confirmed bool, err error) {
	cachedBefore, changedBefore := checksCache(ctx)
	if ct, err = bring(false); err != nil {
		return ct, nil, false, err
	}
	evidence, err = run(ctx, ct)
	cachedAfter, changedAfter := checksCache(ctx)
	cached := cachedBefore || cachedAfter || changedAfter != changedBefore
	if err != nil || !(ct.Leftovers || cached) || !allPassed(evidence) {
		return ct, evidence, false, err
	}
	if ct, err = bring(true); err != nil {
		return ct, nil, true, err
	}
	evidence, err = run(FreshCaches(ctx), ct)
	return ct, evidence, true, err
}

func allPassed(evidence []Evidence) bool {
	return len(evidence) > 0 && !slices.ContainsFunc(evidence, func(e Evidence) bool { return !e.Passed })
}
