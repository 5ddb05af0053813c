package store

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"
	"sync"
)

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
