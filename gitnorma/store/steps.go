package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Step is one committed plan/do/check/act execution. Its artifacts live in Dir on disk; the row
// only references them (spec §0: artifacts are files).
type Step struct {
	RunID     string
	Index     int // 1-based, global across iterations (matches steps/NNN-role)
	Role      string
	Iteration int
	Status    string // ok | fail | skipped
	Dir       string
	StartedAt time.Time
	EndedAt   time.Time // zero stores NULL
	Summary   string    // "" stores NULL
	// Output is the step's output.json as committed ("" stores NULL: a step reconciled after a
	// crash, or one committed before schema version 4).
	Output string
}

// StepCommit is everything spec §4.1 requires to change together when a step finishes: the
// step row, its events and the run cursor.
type StepCommit struct {
	Step             Step
	Events           []Event
	Iteration        int
	CurrentStepIndex int
	Verdict          string // "" leaves runs.verdict unchanged
	Status           string // "" leaves runs.status unchanged
	// KV are run metadata set with the step (kv_run upserts), such as the outputs a landing
	// reads: they change together with the step row.
	KV map[string]any
}

// CommitStep applies a StepCommit in one BEGIN IMMEDIATE transaction: after a crash the DB has
// the whole step or none of it, and ReconcileStep repairs a step dir without its row.
func (s *Store) CommitStep(ctx context.Context, c StepCommit) error {
	st := c.Step
	if st.RunID == "" {
		return errors.New("store: CommitStep: empty run ID")
	}
	if st.StartedAt.IsZero() {
		return errors.New("store: CommitStep: zero StartedAt")
	}
	return s.unsynced(ctx, func(conn *sql.Conn) error {
		if err := insertStep(ctx, conn, st); err != nil {
			return err
		}
		if err := appendEvents(ctx, conn, st.RunID, c.Events); err != nil {
			return err
		}
		for k, v := range c.KV {
			if err := setKV(ctx, conn, st.RunID, k, v); err != nil {
				return err
			}
		}
		res, err := conn.ExecContext(ctx, `UPDATE runs SET current_step_index = ?, iteration = ?,
			verdict = COALESCE(?, verdict), status = COALESCE(?, status) WHERE run_id = ?`,
			c.CurrentStepIndex, c.Iteration, nullString(c.Verdict), nullString(c.Status), st.RunID)
		if err != nil {
			return fmt.Errorf("store: update run %s: %w", st.RunID, err)
		}
		return mustAffect(res, st.RunID)
	})
}

func insertStep(ctx context.Context, conn *sql.Conn, st Step) error {
	_, err := conn.ExecContext(ctx, `INSERT INTO steps(run_id, step_index, role, iteration, status,
		step_dir, started_at, ended_at, summary, output_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		st.RunID, st.Index, st.Role, st.Iteration, st.Status, st.Dir,
		FormatTime(st.StartedAt), nullTime(st.EndedAt), nullString(st.Summary), nullString(st.Output))
	if err != nil {
		return fmt.Errorf("store: insert step %s/%d: %w", st.RunID, st.Index, err)
	}
	return nil
}

// Steps returns a run's steps in execution order.
func (s *Store) Steps(ctx context.Context, runID string) ([]Step, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, step_index, role, iteration, status, step_dir,
		started_at, ended_at, summary, output_json FROM steps WHERE run_id = ? ORDER BY step_index`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var (
			st                     Step
			started                string
			ended, summary, output sql.NullString
		)
		if err := rows.Scan(&st.RunID, &st.Index, &st.Role, &st.Iteration, &st.Status, &st.Dir,
			&started, &ended, &summary, &output); err != nil {
			return nil, err
		}
		if st.StartedAt, err = ParseTime(started); err != nil {
			return nil, err
		}
		if st.EndedAt, err = parseNullTime(ended); err != nil {
			return nil, err
		}
		st.Summary, st.Output = summary.String, output.String
		out = append(out, st)
	}
	return out, rows.Err()
}

// ReconcileStepMessage is the event message ReconcileStep records, fixed by spec §4.2 so that
// recovered steps are recognisable in every timeline.
const ReconcileStepMessage = "Step dir exists but DB record was missing; inserted during recovery"

// ReconcileStep repairs a step whose dir exists but whose commit never reached the DB (spec
// §4.2): it inserts a minimal status=fail row without guessing a verdict, records a
// "reconciled_step" event and advances runs.current_step_index to at least index, so the loop
// does not reuse the index and collide with the existing dir. A row already there makes it a
// no-op, safe on every startup.
func (s *Store) ReconcileStep(ctx context.Context, runID string, index int, role, dir string, at time.Time) error {
	if index < 1 {
		return fmt.Errorf("store: ReconcileStep: step index %d < 1", index)
	}
	at = nowOr(at)
	return s.immediate(ctx, func(conn *sql.Conn) error {
		var one int
		err := conn.QueryRowContext(ctx,
			`SELECT 1 FROM steps WHERE run_id = ? AND step_index = ?`, runID, index).Scan(&one)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		st := Step{RunID: runID, Index: index, Role: role, Iteration: (index-1)/4 + 1,
			Status: "fail", Dir: dir, StartedAt: at}
		if err := insertStep(ctx, conn, st); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, `UPDATE runs SET current_step_index =
			MAX(current_step_index, ?) WHERE run_id = ?`, index, runID); err != nil {
			return err
		}
		return appendEvents(ctx, conn, runID, []Event{{
			TS: at, Type: "reconciled_step", Message: ReconcileStepMessage,
			Data: map[string]any{"step_index": index, "role": role, "step_dir": dir},
		}})
	})
}
