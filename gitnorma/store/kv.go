package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Well-known kv_run keys. The spec's runs table has no columns for this
// run-scoped metadata, and kv_run exists precisely to hold it; the read
// methods surface these three as Run fields.
const (
	KeyTaskID     = "task_id"
	KeyStopReason = "stop_reason"
	KeyEndedAt    = "ended_at"
)

// SetKV upserts one run-scoped metadata value, JSON-encoded so any caller
// (or tool) can read it back without knowing the Go type.
func (s *Store) SetKV(ctx context.Context, runID, key string, value any) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		return setKV(ctx, conn, runID, key, value)
	})
}

// KV returns all metadata of a run as raw JSON, leaving decoding to the
// caller that knows each value's type. A run without metadata yields an
// empty, non-nil map.
func (s *Store) KV(ctx context.Context, runID string) (map[string]json.RawMessage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, value_json FROM kv_run WHERE run_id = ?`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]json.RawMessage{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = json.RawMessage(v)
	}
	return out, rows.Err()
}

func setKV(ctx context.Context, conn *sql.Conn, runID, key string, value any) error {
	v, err := encodeJSON(value)
	if err != nil {
		return fmt.Errorf("store: kv %q: %w", key, err)
	}
	_, err = conn.ExecContext(ctx, `INSERT INTO kv_run(run_id, key, value_json) VALUES (?, ?, ?)
		ON CONFLICT(run_id, key) DO UPDATE SET value_json = excluded.value_json`, runID, key, v)
	if err != nil {
		return fmt.Errorf("store: set kv %s/%s: %w", runID, key, err)
	}
	return nil
}

// setRunKV stores the well-known keys, skipping empty values.
func setRunKV(ctx context.Context, conn *sql.Conn, runID, taskID, stopReason string, endedAt time.Time) error {
	kv := []struct {
		key, val string
	}{
		{KeyTaskID, taskID},
		{KeyStopReason, stopReason},
		{KeyEndedAt, ""},
	}
	if !endedAt.IsZero() {
		kv[2].val = FormatTime(endedAt)
	}
	for _, e := range kv {
		if e.val == "" {
			continue
		}
		if err := setKV(ctx, conn, runID, e.key, e.val); err != nil {
			return err
		}
	}
	return nil
}

// encodeJSON is the single encoder for kv values, so lookups by value
// (RunsForTask) produce byte-identical JSON to what was stored.
func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// decodeKVString reads a JSON string value; non-string JSON is returned raw
// rather than dropped, since it was written by someone on purpose.
func decodeKVString(ns sql.NullString) string {
	if !ns.Valid {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(ns.String), &s); err != nil {
		return ns.String
	}
	return s
}

// KeyPassHead is the kv key of the commit a run's PASS holds for.
const KeyPassHead = "pass_head"

// RecordPass records what a run's PASS holds for, in one transaction: the commit (kv
// pass_head) and the tree id its checks ran on (runs.pass_tree; "" records none, and landing
// then refuses it).
func (s *Store) RecordPass(ctx context.Context, runID, head, tree string) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `UPDATE runs SET pass_tree = ? WHERE run_id = ?`, nullString(tree), runID)
		if err != nil {
			return fmt.Errorf("store: record the PASS of %s: %w", runID, err)
		}
		if err := mustAffect(res, runID); err != nil {
			return err
		}
		return setKV(ctx, conn, runID, KeyPassHead, head)
	})
}

// PassTree is the tree id a run's PASS was checked on ("" when none is recorded).
func (s *Store) PassTree(ctx context.Context, runID string) (string, error) {
	var tree sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT pass_tree FROM runs WHERE run_id = ?`, runID).Scan(&tree)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return tree.String, err
}
