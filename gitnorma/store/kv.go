package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// SetKV upserts one run-scoped metadata value, JSON-encoded so any caller (or tool) can read it
// back without knowing the Go type.
func (s *Store) SetKV(ctx context.Context, runID, key string, value any) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		return setKV(ctx, conn, runID, key, value)
	})
}

// KV returns all metadata of a run as raw JSON, for the caller that knows each value's type to
// decode. A run without metadata yields an empty, non-nil map.
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
	v, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("store: kv %q: %w", key, err)
	}
	_, err = conn.ExecContext(ctx, `INSERT INTO kv_run(run_id, key, value_json) VALUES (?, ?, ?)
		ON CONFLICT(run_id, key) DO UPDATE SET value_json = excluded.value_json`, runID, key, string(v))
	if err != nil {
		return fmt.Errorf("store: set kv %s/%s: %w", runID, key, err)
	}
	return nil
}
