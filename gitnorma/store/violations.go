package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Violation is what the fallback guard found a run's agent did: it wrote where no agent may
// (Paths, each with its fate). It is pending until the user clears it (git norma resume), and
// run and loop refuse to start while one is.
type Violation struct {
	RunID, TaskID string
	Paths         []string
	At            time.Time
	ClearedAt     time.Time // zero while pending
}

// violationTime keeps a violation's times as given, zone and all, to the nanosecond: they are
// shown as they were taken (status --json) and compared with a run's start.
const violationTime = time.RFC3339Nano

// RecordViolation records v as the run's violation, pending: in place of a cleared one, added
// to one still pending (the user has seen neither).
func (s *Store) RecordViolation(ctx context.Context, v Violation) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		all := append([]string{}, v.Paths...)
		var pending string
		err := conn.QueryRowContext(ctx, `SELECT paths_json FROM guard_violations WHERE run_id = ? AND cleared_at IS NULL`, v.RunID).Scan(&pending)
		if err == nil {
			var earlier []string
			if json.Unmarshal([]byte(pending), &earlier) != nil {
				earlier = []string{pending} // as PendingViolations shows it
			}
			all = append(earlier, slices.DeleteFunc(all, func(p string) bool { return slices.Contains(earlier, p) })...)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: read the violation of run %s: %w", v.RunID, err)
		}
		paths, err := json.Marshal(all)
		if err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, `INSERT INTO guard_violations(run_id, task_id, paths_json, at) VALUES (?, ?, ?, ?)
			ON CONFLICT(run_id) DO UPDATE SET task_id = excluded.task_id, paths_json = excluded.paths_json,
				at = excluded.at, cleared_at = NULL`,
			v.RunID, v.TaskID, string(paths), v.At.Format(violationTime))
		if err != nil {
			return fmt.Errorf("store: record the violation of run %s: %w", v.RunID, err)
		}
		return nil
	})
}

// ClearViolation marks the run's violation seen by the user at t.
func (s *Store) ClearViolation(ctx context.Context, runID string, t time.Time) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `UPDATE guard_violations SET cleared_at = ? WHERE run_id = ?`, t.Format(violationTime), runID)
		if err != nil {
			return fmt.Errorf("store: clear the violation of run %s: %w", runID, err)
		}
		return nil
	})
}

// PendingViolations lists the violations not cleared yet, by run id. A row that does not read
// (only a hand edit or an unconfined agent writes one) is pending all the same, its text for
// its paths: it must neither hide the others nor be lost — the user clears it with resume.
func (s *Store) PendingViolations(ctx context.Context) ([]Violation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, task_id, paths_json, at FROM guard_violations
		WHERE cleared_at IS NULL ORDER BY run_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Violation
	for rows.Next() {
		var v Violation
		var paths, at string
		if err := rows.Scan(&v.RunID, &v.TaskID, &paths, &at); err != nil {
			return nil, err
		}
		if json.Unmarshal([]byte(paths), &v.Paths) != nil {
			v.Paths = []string{paths}
		}
		v.At, _ = time.Parse(violationTime, at) // zero: not "since" any run's start
		out = append(out, v)
	}
	return out, rows.Err()
}
