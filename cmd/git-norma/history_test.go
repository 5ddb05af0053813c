package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// historyStart is when the synthetic history begins; run i starts i minutes later.
var historyStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fillHistory writes a synthetic history into an initialised norma.db, in one transaction:
// runs finished runs of tasks "norma-h<i%500>", each with stepsPerRun steps and eventsPerRun
// events. Run ids sort by time like real ones.
func fillHistory(dbPath string, runs, stepsPerRun, eventsPerRun int) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmts := map[string]string{
		"run": `INSERT INTO runs(run_id, created_at, goal, status, iteration, current_step_index, verdict, run_dir, task_id, ended_at)
			VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
		"step":  `INSERT INTO steps(run_id, step_index, role, iteration, status, step_dir, started_at, ended_at, summary) VALUES (?, ?, ?, 1, 'ok', ?, ?, ?, ?)`,
		"event": `INSERT INTO events(run_id, seq, ts, type, message, data_json) VALUES (?, ?, ?, ?, ?, NULL)`,
	}
	prepared := map[string]*sql.Stmt{}
	for name, q := range stmts {
		if prepared[name], err = tx.PrepareContext(ctx, q); err != nil {
			return err
		}
	}
	roles := []string{"plan", "do", "check", "act"}
	for i := 0; i < runs; i++ {
		at := historyStart.Add(time.Duration(i) * time.Minute)
		id := historyRunID(i)
		ts := store.FormatTime(at)
		status, verdict := "passed", any("PASS")
		if i%3 == 0 {
			status, verdict = "failed", "FAIL"
		}
		exec := func(name string, args ...any) {
			if err == nil {
				_, err = prepared[name].ExecContext(ctx, args...)
			}
		}
		exec("run", id, ts, fmt.Sprintf("Synthetic task %d", i), status, stepsPerRun, verdict, ".norma/runs/"+id,
			fmt.Sprintf("norma-h%d", i%500), store.FormatTime(at.Add(30*time.Second)))
		for s := 1; s <= stepsPerRun; s++ {
			role := roles[(s-1)%4]
			exec("step", id, s, role, fmt.Sprintf(".norma/runs/%s/steps/%03d-%s", id, s, role), ts, ts, role+" done")
		}
		for e := 1; e <= eventsPerRun; e++ {
			exec("event", id, e, ts, "step_committed", fmt.Sprintf("event %d of run %d", e, i))
		}
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

func historyRunID(i int) string {
	return fmt.Sprintf("r-%s-%06x", historyStart.Add(time.Duration(i)*time.Minute).Format("20060102-150405-000"), i)
}

// TestStatusLargeHistory: with 10,000 runs, 40,000 steps and 100,000 events, status still
// lists only the newest runs, newest first, and a run's or a task's detail comes back whole —
// every query is bounded and indexed (store's EXPLAIN tests say how).
func TestStatusLargeHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-run database")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	t.Chdir(dir)
	run := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return out.String() + errb.String(), code
	}
	_, code := run("init")
	require.Equal(t, 0, code)
	require.NoError(t, fillHistory(filepath.Join(dir, ".norma", "norma.db"), 10000, 4, 10))

	out, code := run("status", "--json")
	require.Equal(t, 0, code, out)
	var rep struct {
		Runs []struct {
			RunID  string `json:"run_id"`
			TaskID string `json:"task_id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Runs, 20, "the default limit")
	for k, r := range rep.Runs {
		assert.Equal(t, historyRunID(9999-k), r.RunID, "newest first")
	}
	assert.Equal(t, "norma-h499", rep.Runs[0].TaskID)

	out, code = run("status", "-n", "3")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, historyRunID(9999))
	assert.NotContains(t, out, historyRunID(9996))

	out, code = run("status", historyRunID(42), "--json")
	require.Equal(t, 0, code, out)
	var detail struct {
		Steps  []json.RawMessage `json:"steps"`
		Events []struct {
			Message string `json:"message"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &detail), out)
	assert.Len(t, detail.Steps, 4)
	require.Len(t, detail.Events, 10)
	assert.Equal(t, "event 10 of run 42", detail.Events[9].Message)

	out, code = run("status", "norma-h7", "--json", "-n", "0")
	require.Equal(t, 0, code, out)
	assert.Equal(t, 20, strings.Count(out, `"run_id"`), "10,000 runs over 500 tasks: 20 of norma-h7")
}
