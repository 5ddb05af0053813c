package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeWorkspace is an in-memory Workspace over a real directory (checks run in it). Changes
// reports the paths marked dirty with touch plus every file that appeared in the directory
// since the snapshot; Commit and Discard settle both.
type fakeWorkspace struct {
	mu         sync.Mutex
	dir        string
	head       string // moves only when a commit changed something, as git's HEAD does
	baseline   map[string]bool
	dirty      []string
	snapshots  int
	discards   int
	commits    []CommitRequest
	patchBytes int64
	commitErr  error
	snapErr    error
	rollbacks  []string
	outside    []string
	// checkDir, when set, is where CheckTree says the checks run (else dir, the workspace, as
	// if the commit's tree were exactly what is there); checkedAt lists the commits asked for.
	checkDir  string
	checkedAt []string
}

func newFakeWorkspace(t *testing.T) *fakeWorkspace {
	t.Helper()
	return &fakeWorkspace{dir: t.TempDir(), head: "head-0", baseline: map[string]bool{}}
}

func (w *fakeWorkspace) Dir() string { return w.dir }

func (w *fakeWorkspace) CheckTree(_ context.Context, commit string, _ bool) (CheckTree, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkedAt = append(w.checkedAt, commit)
	dir := w.dir
	if w.checkDir != "" {
		dir = w.checkDir
	}
	return CheckTree{Dir: dir, Tree: "tree-of-" + commit}, nil
}

func (w *fakeWorkspace) Snapshot(context.Context, bool) (Snapshot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.snapErr != nil {
		return Snapshot{}, w.snapErr
	}
	w.snapshots++
	return Snapshot{Head: w.head, Status: fmt.Sprint(len(w.dirty))}, nil
}

// touch marks path as changed, as if an agent had written it.
func (w *fakeWorkspace) touch(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dirty = append(w.dirty, path)
}

func (w *fakeWorkspace) newFiles() []string {
	entries, _ := os.ReadDir(w.dir)
	var out []string
	for _, e := range entries {
		if !w.baseline[e.Name()] {
			out = append(out, e.Name())
		}
	}
	return out
}

func (w *fakeWorkspace) Changes(context.Context, Snapshot) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(slices.Clone(w.dirty), w.newFiles()...), nil
}

func (w *fakeWorkspace) Discard(context.Context, Snapshot) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.discards++
	w.dirty = nil
	for _, name := range w.newFiles() {
		if err := os.RemoveAll(filepath.Join(w.dir, name)); err != nil {
			return err
		}
	}
	return nil
}

func (w *fakeWorkspace) Commit(_ context.Context, _ Snapshot, req CommitRequest) (CommitResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.commitErr != nil {
		return CommitResult{}, w.commitErr
	}
	w.commits = append(w.commits, req)
	changed := len(w.dirty)+len(w.newFiles()) > 0
	for _, name := range w.newFiles() {
		w.baseline[name] = true
	}
	w.dirty = nil
	if changed {
		w.head = fmt.Sprintf("c0ffee%04d%s", req.StepIndex, "0123456789abcdef")
	}
	// Like the real workspace: the commit made, or the head as it was when nothing changed.
	return CommitResult{PatchBytes: w.patchBytes, Changed: changed, Commit: w.head}, nil
}

func (w *fakeWorkspace) Rollback(_ context.Context, to string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rollbacks = append(w.rollbacks, to)
	return "refs/norma/attempts/test/1", nil
}

func (w *fakeWorkspace) OutsideChanges(context.Context, Snapshot) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outside, nil
}

func (w *fakeWorkspace) discardCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.discards
}

// fakeRecorder keeps every committed step in memory.
type fakeRecorder struct {
	mu      sync.Mutex
	records []StepRecord
	err     error
}

func (r *fakeRecorder) CommitStep(ctx context.Context, rec StepRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		return fmt.Errorf("recorder got a cancelled context: %w", ctx.Err())
	}
	if r.err != nil {
		return r.err
	}
	r.records = append(r.records, rec)
	return nil
}

func (r *fakeRecorder) all() []StepRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

// dirs lists the step directory names in record order.
func (r *fakeRecorder) dirs() []string {
	var out []string
	for _, rec := range r.all() {
		out = append(out, filepath.Base(rec.Dir))
	}
	return out
}

func (r *fakeRecorder) byDir(t *testing.T, name string) StepRecord {
	t.Helper()
	for _, rec := range r.all() {
		if filepath.Base(rec.Dir) == name {
			return rec
		}
	}
	require.Failf(t, "no such step record", "%s (have %v)", name, r.dirs())
	return StepRecord{}
}

func eventTypes(rec StepRecord) []string {
	var out []string
	for _, ev := range rec.Events {
		out = append(out, ev.Type)
	}
	return out
}

// scriptedAgent answers with fn and remembers every request it got.
type scriptedAgent struct {
	mu   sync.Mutex
	reqs []Request
	fn   func(ctx context.Context, call int, req Request) (Output, error)
}

func script(fn func(ctx context.Context, call int, req Request) (Output, error)) *scriptedAgent {
	return &scriptedAgent{fn: fn}
}

// always answers every call with the same output.
func always(out Output) *scriptedAgent {
	return script(func(context.Context, int, Request) (Output, error) { return out, nil })
}

func (a *scriptedAgent) Run(ctx context.Context, req Request) (Output, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	call := len(a.reqs)
	a.mu.Unlock()
	return a.fn(ctx, call, req)
}

func (a *scriptedAgent) requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

// answerText is a valid answer of the role, testdata/answers/<role>.json (the CLI agents'
// tests use them too).
func answerText(t *testing.T, role Role) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "answers", string(role)+".json"))
	require.NoError(t, err)
	return string(data)
}

// answerOutput is the answer as an agent returns it: decoded and validated.
func answerOutput(t *testing.T, role Role) Output {
	t.Helper()
	out, err := DecodeOutput([]byte(answerText(t, role)))
	require.NoError(t, err)
	require.NoError(t, ValidateOutput(role, testTaskID, &out))
	return out
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const testTaskID = "norma-t1"

// planWith is a valid plan output whose effective criteria run the given commands: one AC per
// command, one do step DO-1 with command CMD-1.
func planWith(cmds ...string) Output {
	eff := []EffectiveCriterion{}
	for i, c := range cmds {
		id := fmt.Sprintf("AC-%d", i+1)
		eff = append(eff, EffectiveCriterion{ID: id, Origin: "baseline", Text: "criterion " + id,
			Checks: []CheckSpec{{ID: "CHK-" + id, Cmd: c}}})
	}
	return Output{
		Status:   StatusOK,
		Summary:  Summary{Text: "planned"},
		Progress: Progress{Title: "plan", Details: []string{"goal: g"}},
		Plan: &Plan{
			TaskID: testTaskID, Goal: "make it work",
			AcceptanceCriteria: PlanCriteria{Effective: eff},
			WorkPlan: WorkPlan{DoSteps: []DoStep{{ID: "DO-1", Text: "do it",
				Commands: []CommandRef{{ID: "CMD-1", Cmd: "make"}}}}},
		},
	}
}

func doneAll() Output {
	zero := 0
	return Output{Status: StatusOK, Summary: Summary{Text: "did it"},
		Progress: Progress{Title: "do", Details: []string{"executed DO-1"}},
		Do: &Do{Execution: Execution{ExecutedStepIDs: []string{"DO-1"},
			Commands: []CommandRef{{ID: "CMD-1", Cmd: "make", ExitCode: &zero}}}}}
}

func checkClaim(verdict string, results ...AcceptanceResult) Output {
	return Output{Status: StatusOK, Summary: Summary{Text: "checked"},
		Check: &Check{AcceptanceResults: results, Verdict: Verdict{Status: verdict}}}
}

func actDecide(decision string) Output {
	return Output{Status: StatusOK, Summary: Summary{Text: "acted"},
		Act: &Act{Decision: decision, Rationale: "scripted"}}
}

// testEngine is Options with fakes wired in; tests adjust it before run.
type testEngine struct {
	opts  Options
	ws    *fakeWorkspace
	rec   *fakeRecorder
	clock *fakeClock
}

func newTestEngine(t *testing.T, plan, do, check, act Agent) *testEngine {
	t.Helper()
	ws := newFakeWorkspace(t)
	rec := &fakeRecorder{}
	clock := newFakeClock()
	return &testEngine{
		ws: ws, rec: rec, clock: clock,
		opts: Options{
			RunID: "r-test", RunDir: t.TempDir(),
			Task: TaskInput{ID: testTaskID, Title: "Make it work", Description: "Objective: make it work",
				AcceptanceCriteria: []AcceptanceCriterion{}},
			Budgets: Budgets{MaxIterations: 3},
			Agents: map[Role]RoleAgent{
				RolePlan: {Agent: plan, Timeout: 10 * time.Second}, RoleDo: {Agent: do, Timeout: 10 * time.Second},
				RoleCheck: {Agent: check, Timeout: 10 * time.Second}, RoleAct: {Agent: act, Timeout: 10 * time.Second},
			},
			Workspace: ws, Recorder: rec, Now: clock.Now, Sandbox: testSandbox(t),
		},
	}
}

func (te *testEngine) run(t *testing.T, ctx context.Context) Result {
	t.Helper()
	res, err := Run(ctx, te.opts)
	require.NoError(t, err)
	return res
}

func (te *testEngine) stepDir(name string) string {
	return filepath.Join(te.opts.RunDir, "steps", name)
}

// readStepJSON decodes steps/<name>/<file> into v.
func (te *testEngine) readStepJSON(t *testing.T, name, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(te.stepDir(name), file))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s/%s", name, file)
}

func (te *testEngine) progress(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(te.opts.RunDir, "artifacts", "progress.md"))
	require.NoError(t, err)
	return string(data)
}

// writeScript writes an executable sh script into dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}
