package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"hash"
	"strings"
)

// TaskRecords is what the store says about one run and every run of its task — the runs'
// rows, their steps, their metadata and their guard violations — as a digest per run. While a run holds its task's
// lock nobody but that run writes these (landing, checks and the other runs of a parallel loop
// write their own runs; retention only deletes finished ones), so a run that appears or
// changes without the run writing it is forged. Events are left out: mirrors append them at
// any time.
type TaskRecords map[string]string

// TaskRecords reads the records of runID and of the runs of taskID.
func (s *Store) TaskRecords(ctx context.Context, runID, taskID string) (TaskRecords, error) {
	const runsOf = `SELECT run_id FROM runs WHERE task_id = ?1 UNION SELECT ?2`
	queries := []string{
		`SELECT run_id, kind, created_at, goal, status, iteration, current_step_index, coalesce(verdict, ''), run_dir,
			coalesce(task_id, ''), coalesce(stop_reason, ''), coalesce(ended_at, ''), coalesce(head, ''),
			coalesce(pass_head, ''), coalesce(pass_tree, ''), coalesce(landed_commit, ''), coalesce(claim, ''),
			coalesce(actor, ''), redo, coalesce(fork_base, ''), fork_started, coalesce(fork_target, ''), guard_pending
			FROM runs WHERE run_id IN (` + runsOf + `) ORDER BY run_id`,
		`SELECT run_id, step_index, role, iteration, status, step_dir, started_at, coalesce(ended_at, ''), coalesce(summary, ''),
			coalesce(output_json, '')
			FROM steps WHERE run_id IN (` + runsOf + `) ORDER BY run_id, step_index`,
		`SELECT run_id, key, value_json FROM kv_run WHERE run_id IN (` + runsOf + `) ORDER BY run_id, key`,
		`SELECT run_id, task_id, paths_json, at, coalesce(cleared_at, '') FROM guard_violations
			WHERE run_id IN (` + runsOf + `) ORDER BY run_id`,
	}
	hashes := map[string]hash.Hash{}
	for i, q := range queries {
		rows, err := s.db.QueryContext(ctx, q, taskID, runID)
		if err != nil {
			return nil, err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			parts := make([]string, len(vals))
			for j, v := range vals {
				parts[j] = v.String
			}
			h := hashes[parts[0]]
			if h == nil {
				h = sha256.New()
				hashes[parts[0]] = h
			}
			fmt.Fprintf(h, "%d\x00%s\n", i, strings.Join(parts, "\x00"))
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	out := TaskRecords{}
	for id, h := range hashes {
		out[id] = fmt.Sprintf("%x", h.Sum(nil))
	}
	return out, nil
}

// RemoveRuns deletes runs with their steps, events and metadata whatever their status: the
// runs an agent forged.
func (s *Store) RemoveRuns(ctx context.Context, runIDs []string) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		for _, id := range runIDs {
			for _, table := range []string{"events", "kv_run", "guard_violations", "steps", "runs"} {
				if _, err := conn.ExecContext(ctx, `DELETE FROM `+table+` WHERE run_id = ?`, id); err != nil {
					return fmt.Errorf("store: remove run %s: %w", id, err)
				}
			}
		}
		return nil
	})
}
