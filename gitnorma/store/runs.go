package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Run statuses, mirrored by a CHECK constraint on runs.status. A run is
// "running" until FinishRun records how it ended.
const (
	StatusRunning = "running"
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusStopped = "stopped"
)

// Run is one row of runs plus the run-scoped metadata from kv_run that
// every caller wants (the spec's runs table has no columns for it).
type Run struct {
	ID               string
	CreatedAt        time.Time
	Goal             string
	Status           string
	Iteration        int
	CurrentStepIndex int
	Verdict          string // "" when NULL (no verdict yet)
	RunDir           string

	// Filled from kv_run by the read methods.
	TaskID     string
	StopReason string
	EndedAt    time.Time // zero if the run has not finished
}

// CreateRun records a new run, its initial kv metadata and a "run_started"
// event in one transaction, so a run never exists without its task link or
// first timeline entry. Status defaults to StatusRunning and CreatedAt to
// now; r.TaskID is stored as kv "task_id" (overriding kv["task_id"]).
func (s *Store) CreateRun(ctx context.Context, r Run, kv map[string]any) error {
	if r.ID == "" {
		return errors.New("store: CreateRun: empty run ID")
	}
	if r.Status == "" {
		r.Status = StatusRunning
	}
	r.CreatedAt = nowOr(r.CreatedAt)
	return s.immediate(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `INSERT INTO runs(run_id, created_at, goal, status, iteration,
			current_step_index, verdict, run_dir) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, FormatTime(r.CreatedAt), r.Goal, r.Status, r.Iteration, r.CurrentStepIndex,
			nullString(r.Verdict), r.RunDir); err != nil {
			return fmt.Errorf("store: create run %s: %w", r.ID, err)
		}
		for k, v := range kv {
			if err := setKV(ctx, conn, r.ID, k, v); err != nil {
				return err
			}
		}
		if err := setRunKV(ctx, conn, r.ID, r.TaskID, r.StopReason, r.EndedAt); err != nil {
			return err
		}
		data := map[string]string{"run_dir": r.RunDir}
		if r.TaskID != "" {
			data["task_id"] = r.TaskID
		}
		return appendEvents(ctx, conn, r.ID, []Event{{
			TS: r.CreatedAt, Type: "run_started", Message: "run started: " + r.Goal, Data: data,
		}})
	})
}

// FinishRun records how a run ended: status, verdict ("" keeps the current
// one), kv stop_reason (when non-empty) and ended_at (zero means now), plus
// any closing events, atomically so the timeline and the run row agree.
func (s *Store) FinishRun(ctx context.Context, runID, status, verdict, stopReason string,
	endedAt time.Time, events ...Event) error {
	if status == "" {
		return errors.New("store: FinishRun: empty status")
	}
	return s.immediate(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx,
			`UPDATE runs SET status = ?, verdict = COALESCE(?, verdict) WHERE run_id = ?`,
			status, nullString(verdict), runID)
		if err != nil {
			return fmt.Errorf("store: finish run %s: %w", runID, err)
		}
		if err := mustAffect(res, runID); err != nil {
			return err
		}
		if err := setRunKV(ctx, conn, runID, "", stopReason, nowOr(endedAt)); err != nil {
			return err
		}
		return appendEvents(ctx, conn, runID, events)
	})
}

func mustAffect(res sql.Result, runID string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return nil
}

// runSelect joins the well-known kv keys so listing runs costs one query
// rather than one per run. Each join is a primary-key lookup.
const runSelect = `SELECT r.run_id, r.created_at, r.goal, r.status, r.iteration,
	r.current_step_index, r.verdict, r.run_dir, t.value_json, sr.value_json, ea.value_json
FROM runs r
LEFT JOIN kv_run t  ON t.run_id  = r.run_id AND t.key  = 'task_id'
LEFT JOIN kv_run sr ON sr.run_id = r.run_id AND sr.key = 'stop_reason'
LEFT JOIN kv_run ea ON ea.run_id = r.run_id AND ea.key = 'ended_at'
`

// The listing queries are named so tests can EXPLAIN exactly what runs.
const (
	recentRunsQuery     = runSelect + `ORDER BY r.created_at DESC LIMIT ?`
	runsForTaskQuery    = runSelect + `WHERE t.value_json = ? ORDER BY r.created_at DESC LIMIT ?`
	runsWithStatusQuery = runSelect + `WHERE r.status = ? ORDER BY r.created_at DESC`
	runsWithKVQuery     = runSelect + `WHERE r.run_id IN (SELECT run_id FROM kv_run WHERE key = ? AND value_json = ?) ORDER BY r.created_at DESC`
)

// Run loads one run; a missing run yields an error wrapping ErrNotFound.
func (s *Store) Run(ctx context.Context, runID string) (Run, error) {
	runs, err := s.queryRuns(ctx, runSelect+`WHERE r.run_id = ?`, runID)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return runs[0], nil
}

// RecentRuns lists runs newest first. It walks the created_at index
// backwards and stops after limit rows, so it stays cheap as history grows.
// limit <= 0 means no limit.
func (s *Store) RecentRuns(ctx context.Context, limit int) ([]Run, error) {
	return s.queryRuns(ctx, recentRunsQuery, sqlLimit(limit))
}

// RunsForTask lists a task's runs newest first (limit <= 0: all), found via
// the kv_run(key, value_json) index rather than by scanning runs.
func (s *Store) RunsForTask(ctx context.Context, taskID string, limit int) ([]Run, error) {
	v, err := encodeJSON(taskID)
	if err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, runsForTaskQuery, v, sqlLimit(limit))
}

// RunsWithStatus lists runs in a given status, newest first; recovery uses
// it to find runs left "running" by a crashed process.
func (s *Store) RunsWithStatus(ctx context.Context, status string) ([]Run, error) {
	return s.queryRuns(ctx, runsWithStatusQuery, status)
}

// RunsWithKV lists the runs whose metadata key holds value, newest first; recovery uses it to
// find runs that still hold their task's claim. It is an index lookup, whatever the history.
func (s *Store) RunsWithKV(ctx context.Context, key string, value any) ([]Run, error) {
	v, err := encodeJSON(value)
	if err != nil {
		return nil, err
	}
	return s.queryRuns(ctx, runsWithKVQuery, key, v)
}

// sqlLimit maps "no limit" to SQLite's LIMIT -1.
func sqlLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

func (s *Store) queryRuns(ctx context.Context, query string, args ...any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var (
			r                   Run
			created             string
			verdict, task, stop sql.NullString
			ended               sql.NullString
		)
		if err := rows.Scan(&r.ID, &created, &r.Goal, &r.Status, &r.Iteration, &r.CurrentStepIndex,
			&verdict, &r.RunDir, &task, &stop, &ended); err != nil {
			return nil, err
		}
		if r.CreatedAt, err = ParseTime(created); err != nil {
			return nil, err
		}
		r.Verdict = verdict.String
		r.TaskID = decodeKVString(task)
		r.StopReason = decodeKVString(stop)
		if es := decodeKVString(ended); es != "" {
			if r.EndedAt, err = ParseTime(es); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
