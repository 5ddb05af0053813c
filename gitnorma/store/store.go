// Package store is git-norma's SQLite run store (.norma/norma.db): the authoritative record of
// runs, steps, timeline events and run-scoped metadata.
//
// It uses the pure-Go modernc.org/sqlite driver (no cgo) and one connection per process, so a
// process's writes are serialised in Go rather than fighting over SQLite's write lock; SQLite
// serialises those of different processes (BEGIN IMMEDIATE plus busy_timeout).
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrSchemaTooNew is returned by Open when a newer git-norma migrated the database: older
	// code could silently corrupt its run state, so the file is left untouched.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this binary")

	// ErrCorrupt is returned by Open when the file is not a usable SQLite database. Callers
	// tell the user rather than delete it: it may still hold recoverable run history.
	ErrCorrupt = errors.New("store: database file is not a valid SQLite database")

	// ErrNotFound is returned when a run does not exist.
	ErrNotFound = errors.New("store: not found")
)

// Store is a handle on norma.db, safe for concurrent use: all access goes through one pooled
// connection.
type Store struct {
	db          *sql.DB
	path        string
	journalMode string
}

// Open opens (creating if missing) the database at path, refuses files that are corrupt or were
// written by a newer git-norma without modifying them, switches to WAL when possible and applies
// pending migrations.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// One connection: a single writer per process (spec §2), and the DSN PRAGMAs and BEGIN
	// IMMEDIATE apply to the connection we use.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)

	s := &Store{db: db, path: path}
	if err := s.init(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	// git-norma's schema has no trigger: one there is someone else's (Facts.DropTriggers).
	if _, err := s.Facts().DropTriggers(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// init checks the version first because both WAL and migrations write to the file, and a
// refused file must stay byte-for-byte unchanged.
func (s *Store) init(ctx context.Context) (err error) {
	defer func() { err = classify(s.path, err) }()
	v, err := readVersion(ctx, s.db)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return schemaTooNew(s.path, v)
	}

	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		// Spec §2: proceed in the default journal mode when WAL fails.
		if qerr := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); qerr != nil {
			return qerr
		}
	}
	s.journalMode = strings.ToLower(mode)
	if s.journalMode == "wal" {
		if err := s.keepWALFiles(ctx); err != nil {
			return err
		}
	}

	// Skipping the up-to-date case keeps Open from taking the write lock, so read-only tools do
	// not queue behind a running loop.
	if v < SchemaVersion {
		if err := s.migrate(ctx); err != nil {
			return err
		}
	}
	return s.carryLegacyKV(ctx)
}

// keepWALFiles has the last connection to close leave norma.db-wal (emptied: the DSN's
// journal_size_limit truncates it) and norma.db-shm in place instead of deleting them, so the
// next open does not create both again — that was most of the cost of opening the store, which
// status and every hook do. The files hold nothing once the WAL is checkpointed at close. It
// is set on the connection Open makes; a connection the pool replaces after an error deletes
// the files again at close, which only costs the next open a little.
func (s *Store) keepWALFiles(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		fc, ok := dc.(sqlite.FileControl)
		if !ok {
			return nil
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	})
}

// dsn is a file: URI with the path escaped, so names containing '?', '#' or '%' are not taken
// for parameters. The PRAGMAs live in the DSN because the driver applies them to every new
// connection, which a one-off Exec after Open would not.
func dsn(path string) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath() + "?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_size_limit(4194304)"
}

// schemaTooNew refuses a store a newer git-norma made.
func schemaTooNew(path string, v int) error {
	return fmt.Errorf("%s has schema version %d but this git-norma knows only up to %d: upgrade git-norma: %w",
		path, v, SchemaVersion, ErrSchemaTooNew)
}

// classify turns SQLite's "not a database"/"corrupt" codes into ErrCorrupt with an actionable
// message; other errors are only annotated.
func classify(path string, err error) error {
	if err == nil || errors.Is(err, ErrSchemaTooNew) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%s is not a usable SQLite database (%v); move it aside (e.g. mv %s %s.bad) and rerun: %w",
				path, err, path, path, ErrCorrupt)
		}
	}
	return fmt.Errorf("store: %s: %w", path, err)
}

// Close releases the database; SQLite checkpoints the WAL.
func (s *Store) Close() error {
	return s.db.Close()
}

// JournalMode is the journal mode in effect: "wal", unless WAL is unavailable (some network
// file systems).
func (s *Store) JournalMode() string { return s.journalMode }

// SchemaVersion is the schema version recorded in the database: the SchemaVersion constant
// after Open, unless a newer binary has migrated the file since.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return readVersion(ctx, s.db)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readVersion returns 0 for a fresh file. It only reads: safe on files Open may refuse.
func readVersion(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_migrations'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	err = q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// immediate runs fn inside BEGIN IMMEDIATE on a dedicated connection. database/sql's BeginTx
// issues a deferred BEGIN, which can fail with SQLITE_BUSY when it later upgrades to a write
// lock; taking the write lock up front lets busy_timeout do its job and makes the whole step
// commit atomic with respect to other processes (spec §4.1).
func (s *Store) immediate(ctx context.Context, fn func(conn *sql.Conn) error) (err error) {
	return s.transact(ctx, false, fn)
}

// unsynced is immediate for the frequent commits — a run's steps, four per iteration — made
// with synchronous=NORMAL in WAL mode: without an fsync of their own. Such a commit survives
// any crash of the process; only a power loss can roll it back (never corrupt the file),
// leaving a step directory without its row, which is the state reconciliation repairs (spec
// section 4.2). Every other commit (a run's creation and claim, its end, landing) stays FULL,
// and syncing the WAL syncs everything committed before it: nothing another system acted on
// after such a commit can be rolled back.
func (s *Store) unsynced(ctx context.Context, fn func(conn *sql.Conn) error) error {
	return s.transact(ctx, s.journalMode == "wal", fn)
}

func (s *Store) transact(ctx context.Context, lazy bool, fn func(conn *sql.Conn) error) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if lazy {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
			return err
		}
		defer func() {
			// Back to FULL for whoever uses the connection next; a connection that cannot be
			// set back is dropped rather than reused at the lower level.
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous=FULL"); rerr != nil {
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	done := false
	defer func() {
		if done {
			return
		}
		// Roll back even if ctx was cancelled: the pooled connection must never be handed out
		// again with a transaction open.
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := fn(conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	done = true
	return nil
}
