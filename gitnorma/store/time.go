package store

import (
	"database/sql"
	"fmt"
	"time"
)

// TimeLayout is RFC3339 with a fixed three-digit fraction. The fixed width (and UTC) makes stored
// timestamps sort as text in time order, so ORDER BY created_at uses a plain TEXT index.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t the way every timestamp column stores it.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// ParseTime reads a stored timestamp back as UTC. It accepts any RFC3339 value, so rows written
// by other tools (or by hand) still load.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		t, err = time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("store: bad timestamp %q: %w", s, err)
		}
	}
	return t.UTC(), nil
}

// nullTime maps the zero time to NULL for nullable columns.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return FormatTime(t)
}

// nullString maps "" to NULL for nullable columns.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// parseNullTime is ParseTime for nullable columns: NULL yields zero time.
func parseNullTime(ns sql.NullString) (time.Time, error) {
	if !ns.Valid || ns.String == "" {
		return time.Time{}, nil
	}
	return ParseTime(ns.String)
}

// nowOr defaults a zero time to the current time.
func nowOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
