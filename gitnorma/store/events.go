package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one entry of a run's timeline. The store assigns Seq on write (the caller's value is
// ignored), gap-free and monotonic per run even with several writers.
type Event struct {
	RunID   string
	Seq     int
	TS      time.Time // zero means "now" on write
	Type    string
	Message string
	// Data is marshalled to data_json on write; nil stores NULL. Reads leave it nil and fill
	// DataJSON instead: the store cannot know the payload's Go type.
	Data any
	// DataJSON is the raw stored payload ("" for NULL). On write it is used only when Data is
	// nil, for callers holding encoded JSON.
	DataJSON string
}

// AppendEvent adds one event to a run's timeline, under BEGIN IMMEDIATE: the next seq is read
// and written in one transaction, where a deferred one could hand two writers the same seq.
func (s *Store) AppendEvent(ctx context.Context, runID string, e Event) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		return appendEvents(ctx, conn, runID, []Event{e})
	})
}

// appendEvents must be called inside an immediate transaction.
func appendEvents(ctx context.Context, conn *sql.Conn, runID string, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	var last int
	if err := conn.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?`, runID).Scan(&last); err != nil {
		return err
	}
	for i, e := range events {
		if e.RunID != "" && e.RunID != runID {
			return fmt.Errorf("store: event %d belongs to run %q, not %q", i, e.RunID, runID)
		}
		data, err := eventData(e)
		if err != nil {
			return fmt.Errorf("store: event %q: %w", e.Type, err)
		}
		last++
		if _, err := conn.ExecContext(ctx,
			`INSERT INTO events(run_id, seq, ts, type, message, data_json) VALUES (?, ?, ?, ?, ?, ?)`,
			runID, last, FormatTime(nowOr(e.TS)), e.Type, e.Message, data); err != nil {
			return fmt.Errorf("store: append event %q: %w", e.Type, err)
		}
	}
	return nil
}

func eventData(e Event) (any, error) {
	if e.Data != nil {
		b, err := json.Marshal(e.Data)
		if err != nil {
			return nil, err
		}
		return string(b), nil
	}
	if e.DataJSON == "" {
		return nil, nil
	}
	if !json.Valid([]byte(e.DataJSON)) {
		return nil, errors.New("DataJSON is not valid JSON")
	}
	return e.DataJSON, nil
}

// Events returns a run's timeline in seq order (the order things happened).
func (s *Store) Events(ctx context.Context, runID string) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT run_id, seq, ts, type, message, data_json FROM events WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e    Event
			ts   string
			data sql.NullString
		)
		if err := rows.Scan(&e.RunID, &e.Seq, &ts, &e.Type, &e.Message, &data); err != nil {
			return nil, err
		}
		if e.TS, err = ParseTime(ts); err != nil {
			return nil, err
		}
		e.DataJSON = data.String
		out = append(out, e)
	}
	return out, rows.Err()
}
