package store

import (
	"context"
	"database/sql"
	"fmt"
)

// A git-norma of schema 6 still running when a newer one migrated the store (an upgrade in the
// middle of a loop) goes on writing, as kv_run rows, the facts migration 7 made columns: a
// --force run's redo, a run's fork point, an unconfined step awaiting the guard, a guard
// violation. Read from the columns alone, its violation would be lost — run and loop start
// again over it — and so would the fork point that refuses a landing. Open carries such rows
// over as migration 7 did. They stay where they are, for the old process reads them back; a
// row is carried once (a carried one differs no more), so Open writes nothing otherwise.

// legacyRows are the kv_run rows of those facts, their JSON NULL where it does not parse.
const legacyRows = `WITH k AS (SELECT run_id, key, CASE WHEN json_valid(value_json) THEN value_json END AS v
	FROM kv_run WHERE key IN ('redo', 'fork_point', 'guard_pending', 'guard_violation')) `

// The conditions under which a row of k says more than its run's row r (and the violations)
// do, each as migration 7 reads it.
const (
	legacyRedo      = `k.key = 'redo' AND k.v = 'true' AND r.redo = 0`
	legacyFork      = `k.key = 'fork_point' AND r.fork_base IS NULL AND typeof(k.v ->> '$.base') = 'text' AND length(k.v ->> '$.base') IN (40, 64) AND k.v ->> '$.base' NOT GLOB '*[^0-9a-f]*'`
	legacyPending   = `k.key = 'guard_pending' AND r.status = 'running' AND r.guard_pending <> coalesce(k.v = 'true', 0)`
	legacyViolation = `k.key = 'guard_violation' AND NOT EXISTS (SELECT 1 FROM guard_violations g WHERE g.run_id = k.run_id)
		AND json_type(k.v) = 'object'
		AND coalesce(json_type(k.v, '$.paths'), 'null') IN ('array', 'null')
		AND NOT EXISTS (SELECT 1 FROM json_each(k.v, '$.paths') WHERE json_type(k.v, '$.paths') = 'array' AND type <> 'text')
		AND coalesce(json_type(k.v, '$.task_id'), 'null') IN ('text', 'null')
		AND (k.v ->> '$.at' IS NULL OR (k.v ->> '$.at' GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'
			AND julianday(k.v ->> '$.at') IS NOT NULL))
		AND coalesce(json_type(k.v, '$.cleared_at'), 'null') IN ('text', 'null')`
)

// carryLegacyKV carries the rows an older git-norma wrote since the migration into their
// columns. Every command opens the store: when there are no such rows, which is always but
// for that upgrade, it is one look into kv_run's index (0.2–0.3 ms less than asking whether
// any row says more than its columns, docs/performance.md row 4).
func (s *Store) carryLegacyKV(ctx context.Context) error {
	var found bool
	err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM kv_run
		WHERE key IN ('redo', 'fork_point', 'guard_pending', 'guard_violation'))`).Scan(&found)
	if err != nil || !found {
		return err
	}
	err = s.db.QueryRowContext(ctx, legacyRows+`SELECT EXISTS (SELECT 1 FROM k JOIN runs r ON r.run_id = k.run_id WHERE
		(`+legacyRedo+`) OR (`+legacyFork+`) OR (`+legacyPending+`) OR (`+legacyViolation+`))`).Scan(&found)
	if err != nil || !found {
		return err
	}
	return s.immediate(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, carryKV); err != nil {
			return fmt.Errorf("store: carry an older git-norma's records: %w", err)
		}
		return nil
	})
}

// carryKV carries those kv_run rows into their columns: migration 7 runs it once and then
// deletes the rows; Open runs it again for rows an older git-norma wrote since.
const carryKV = `UPDATE runs AS r SET redo = 1 WHERE EXISTS (` + legacyRows + `SELECT 1 FROM k WHERE k.run_id = r.run_id AND ` + legacyRedo + `);
UPDATE runs AS r SET
	fork_base = (` + legacyRows + `SELECT k.v ->> '$.base' FROM k WHERE k.run_id = r.run_id AND k.key = 'fork_point'),
	fork_started = coalesce((` + legacyRows + `SELECT (k.v ->> '$.started') IS 1 FROM k WHERE k.run_id = r.run_id AND k.key = 'fork_point'), 0),
	fork_target = (` + legacyRows + `SELECT k.v ->> '$.target' FROM k WHERE k.run_id = r.run_id AND k.key = 'fork_point' AND typeof(k.v ->> '$.target') = 'text')
	WHERE EXISTS (` + legacyRows + `SELECT 1 FROM k WHERE k.run_id = r.run_id AND ` + legacyFork + `);
UPDATE runs AS r SET guard_pending = 1 - guard_pending WHERE EXISTS (` + legacyRows + `SELECT 1 FROM k WHERE k.run_id = r.run_id AND ` + legacyPending + `);
` + legacyRows + `INSERT INTO guard_violations(run_id, task_id, paths_json, at, cleared_at)
	SELECT k.run_id, coalesce(k.v ->> '$.task_id', ''),
		CASE json_type(k.v, '$.paths') WHEN 'array' THEN k.v -> '$.paths' ELSE '[]' END,
		coalesce(k.v ->> '$.at', '0001-01-01T00:00:00Z'), k.v ->> '$.cleared_at'
	FROM k JOIN runs r ON r.run_id = k.run_id WHERE ` + legacyViolation + `
	ON CONFLICT(run_id) DO NOTHING;`
