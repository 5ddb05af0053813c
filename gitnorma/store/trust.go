package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Unshielded is the record that a process the kernel did not keep out of the store ran here —
// an unconfined agent, or an unconfined check command (which runs an agent's code): any such
// process could have written any record, a PASS of any task included. From then on a PASS read
// from the store is a hint, not evidence: landing checks the tree again, and the hooks' gate
// does not take it (package gitnorma).
type Unshielded struct {
	// At is when the first such process was about to start; What says which.
	At   time.Time `json:"at"`
	What string    `json:"what"`
}

// factUnshielded is the store_facts key of Unshielded.
const factUnshielded = "unshielded"

// Facts are the facts of the store itself (table store_facts), beside the runs it records.
type Facts struct{ s *Store }

// Facts are the store's facts of itself.
func (s *Store) Facts() Facts { return Facts{s} }

// MarkUnshielded records u unless a record is there already: the first one stays.
func (f Facts) MarkUnshielded(ctx context.Context, u Unshielded) error {
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return f.s.immediate(ctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `INSERT OR IGNORE INTO store_facts(key, value_json) VALUES (?, ?)`, factUnshielded, string(data))
		return err
	})
}

// RestoreUnshielded puts u back as the record, whatever is there now (the fallback guard's
// undoing of an agent that changed or removed it).
func (f Facts) RestoreUnshielded(ctx context.Context, u Unshielded) error {
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return f.s.immediate(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, createFacts); err != nil { // dropped meanwhile
			return err
		}
		_, err := conn.ExecContext(ctx, `INSERT OR REPLACE INTO store_facts(key, value_json) VALUES (?, ?)`, factUnshielded, string(data))
		return err
	})
}

// UnshieldedSince is the record, and whether there is one. A record that does not decode is
// one all the same (Unshielded.What says so).
func (f Facts) UnshieldedSince(ctx context.Context) (Unshielded, bool, error) {
	var raw string
	err := f.s.db.QueryRowContext(ctx, `SELECT value_json FROM store_facts WHERE key = ?`, factUnshielded).Scan(&raw)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Unshielded{}, false, nil
	case err != nil:
		return Unshielded{}, false, err
	}
	var u Unshielded
	if json.Unmarshal([]byte(raw), &u) != nil {
		u.What = "a record that does not read back: " + raw
	}
	return u, true, nil
}

// ClearUnshielded removes the record: the user vouches for every record in the store.
func (f Facts) ClearUnshielded(ctx context.Context) error {
	return f.s.immediate(ctx, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `DELETE FROM store_facts WHERE key = ?`, factUnshielded)
		return err
	})
}

// Schema is a digest of the store's schema (its tables, indexes, triggers and views): what no
// one but git-norma's migrations changes.
func (f Facts) Schema(ctx context.Context) (string, error) {
	rows, err := f.s.db.QueryContext(ctx, `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	h := sha256.New()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		h.Write([]byte(line + "\n"))
	}
	return fmt.Sprintf("%x", h.Sum(nil)), rows.Err()
}

// DropTriggers drops every trigger: git-norma's schema has none, and one an agent made would
// write records (a PASS, say) whenever git-norma writes its own. It returns their names.
func (f Facts) DropTriggers(ctx context.Context) ([]string, error) {
	rows, err := f.s.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'trigger'`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if _, err := f.s.db.ExecContext(ctx, `DROP TRIGGER IF EXISTS "`+strings.ReplaceAll(n, `"`, `""`)+`"`); err != nil {
			return names, err
		}
	}
	return names, nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns "ok" or SQLite's findings, which
// include the tables and indexes of the schema that are missing (SQLite finds a file without
// them sound: someone dropped them, or another tool wrote the file).
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var res string
	if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		return res, err
	}
	var missing []string
	for _, obj := range schemaObjects() {
		var one int
		err := s.db.QueryRowContext(ctx, `SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?`, obj[0], obj[1]).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			missing = append(missing, obj[0]+" "+obj[1])
		} else if err != nil {
			return "", err
		}
	}
	if len(missing) > 0 {
		return "missing " + strings.Join(missing, ", "), nil
	}
	return "ok", nil
}

var createRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^CREATE (TABLE|INDEX) (?:IF NOT EXISTS )?(\w+)`) })

// schemaObjects lists the (type, name) of every table and index the migrations create.
func schemaObjects() [][2]string {
	var objs [][2]string
	for _, m := range migrations {
		for _, c := range createRE().FindAllStringSubmatch(m, -1) {
			objs = append(objs, [2]string{strings.ToLower(c[1]), c[2]})
		}
	}
	return objs
}
