package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "norma.db")
	s, err := Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return sha256.Sum256(b)
}

type column struct {
	Name    string
	Type    string
	NotNull bool
	Default sql.NullString
	PK      int
}

func TestSchemaMatchesSpec(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	col := func(name, typ string, notNull bool, pk int) column {
		return column{Name: name, Type: typ, NotNull: notNull, PK: pk}
	}
	zero := sql.NullString{String: "0", Valid: true}
	want := map[string][]column{
		"schema_migrations": {col("version", "INTEGER", false, 1), col("applied_at", "TEXT", true, 0)},
		"runs": {
			col("run_id", "TEXT", false, 1), col("created_at", "TEXT", true, 0), col("goal", "TEXT", true, 0),
			col("status", "TEXT", true, 0),
			{Name: "iteration", Type: "INTEGER", NotNull: true, Default: zero},
			{Name: "current_step_index", Type: "INTEGER", NotNull: true, Default: zero},
			col("verdict", "TEXT", false, 0), col("run_dir", "TEXT", true, 0),
			// Not in the spec: the facts that decide landings, claims and listings (schema
			// versions 2 and 3).
			col("pass_tree", "TEXT", false, 0),
			{Name: "kind", Type: "TEXT", NotNull: true, Default: sql.NullString{String: "'run'", Valid: true}},
			col("task_id", "TEXT", false, 0), col("stop_reason", "TEXT", false, 0), col("ended_at", "TEXT", false, 0),
			col("head", "TEXT", false, 0), col("pass_head", "TEXT", false, 0), col("landed_commit", "TEXT", false, 0),
			col("claim", "TEXT", false, 0), col("actor", "TEXT", false, 0),
			// the last facts a decision read from kv_run (version 7)
			{Name: "redo", Type: "INTEGER", NotNull: true, Default: zero}, col("fork_base", "TEXT", false, 0),
			{Name: "fork_started", Type: "INTEGER", NotNull: true, Default: zero}, col("fork_target", "TEXT", false, 0),
			{Name: "guard_pending", Type: "INTEGER", NotNull: true, Default: zero},
		},
		"steps": {
			col("run_id", "TEXT", true, 1), col("step_index", "INTEGER", true, 2), col("role", "TEXT", true, 0),
			col("iteration", "INTEGER", true, 0), col("status", "TEXT", true, 0), col("step_dir", "TEXT", true, 0),
			col("started_at", "TEXT", true, 0), col("ended_at", "TEXT", false, 0), col("summary", "TEXT", false, 0),
			col("output_json", "TEXT", false, 0), // not in the spec: the step's output (version 4)
		},
		"events": {
			col("run_id", "TEXT", true, 1), col("seq", "INTEGER", true, 2), col("ts", "TEXT", true, 0),
			col("type", "TEXT", true, 0), col("message", "TEXT", true, 0), col("data_json", "TEXT", false, 0),
		},
		"kv_run": {col("run_id", "TEXT", true, 1), col("key", "TEXT", true, 2), col("value_json", "TEXT", true, 0)},
		// Not in the spec: facts of the store itself (version 6).
		"store_facts": {col("key", "TEXT", false, 1), col("value_json", "TEXT", true, 0)},
		// Not in the spec: the fallback guard's violations (version 7).
		"guard_violations": {
			col("run_id", "TEXT", false, 1), col("task_id", "TEXT", true, 0), col("paths_json", "TEXT", true, 0),
			col("at", "TEXT", true, 0), col("cleared_at", "TEXT", false, 0),
		},
	}

	rows, err := s.db.QueryContext(ctx,
		`SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	assert.ElementsMatch(t, []string{"schema_migrations", "runs", "steps", "events", "kv_run", "store_facts", "guard_violations"}, tables)

	for table, cols := range want {
		t.Run(table, func(t *testing.T) {
			rows, err := s.db.QueryContext(ctx, "PRAGMA table_info("+table+")")
			require.NoError(t, err)
			defer rows.Close()
			var got []column
			for rows.Next() {
				var c column
				var cid int
				require.NoError(t, rows.Scan(&cid, &c.Name, &c.Type, &c.NotNull, &c.Default, &c.PK))
				got = append(got, c)
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, cols, got)
		})
	}

	for table, fk := range map[string]int{"steps": 1, "events": 1, "kv_run": 1, "guard_violations": 1} {
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_list(?)
			WHERE "table" = 'runs' AND "from" = 'run_id' AND on_delete = 'CASCADE'`, table).Scan(&n))
		assert.Equal(t, fk, n, table)
	}

	var versions []int
	rows, err = s.db.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	require.NoError(t, err)
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	var all []int
	for v := 1; v <= SchemaVersion; v++ {
		all = append(all, v)
	}
	assert.Equal(t, all, versions)
	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, SchemaVersion, v)
}

// TestOnlyStepCommitsGoUnsynced checks the durability levels: a step commit runs with
// synchronous=NORMAL (no fsync of its own), and the connection is back at FULL for every other
// commit — the run's creation, its claim, its end.
func TestOnlyStepCommitsGoUnsynced(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	level := func() int {
		var l int
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&l))
		return l
	}
	require.Equal(t, 2, level(), "FULL by default")
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r1", Goal: "g", RunDir: "d"}, nil))
	var during int
	require.NoError(t, s.unsynced(ctx, func(conn *sql.Conn) error {
		return conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&during)
	}))
	assert.Equal(t, 1, during, "NORMAL inside a step commit")
	require.NoError(t, s.CommitStep(ctx, StepCommit{Step: Step{RunID: "r1", Index: 1, Role: "plan", Iteration: 1,
		Status: "ok", Dir: "steps/001-plan", StartedAt: time.Now()}, CurrentStepIndex: 1, Iteration: 1}))
	assert.Equal(t, 2, level(), "FULL again after it")
}

func TestPragmasOnEveryConnection(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	assert.Equal(t, "wal", s.JournalMode())
	check := func() {
		var fk, busy int
		var mode string
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk))
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy))
		require.NoError(t, s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
		assert.Equal(t, 1, fk)
		assert.Equal(t, 5000, busy)
		assert.Equal(t, "wal", mode)
	}
	check()
	// Discard the pooled connection so the next query dials a fresh one.
	conn, err := s.db.Conn(ctx)
	require.NoError(t, err)
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
	check()
}

func TestReopenIsIdempotent(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r1", Goal: "g", RunDir: "d"}, nil))
	require.NoError(t, s.Close())

	for range 2 {
		s2, err := Open(ctx, path)
		require.NoError(t, err)
		var n int
		require.NoError(t, s2.db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n))
		assert.Equal(t, SchemaVersion, n)
		_, err = s2.Run(ctx, "r1")
		assert.NoError(t, err)
		require.NoError(t, s2.Close())
	}
}

// TestCloseKeepsEmptyWALFiles checks that closing leaves the WAL checkpointed into the
// database and truncated, with both side files kept for the next open to reuse, and that the
// database file alone then holds everything written.
func TestCloseKeepsEmptyWALFiles(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	require.NoError(t, s.CreateRun(ctx, Run{ID: "r1", Goal: "g", RunDir: "d"}, nil))
	wal, err := os.Stat(path + "-wal")
	require.NoError(t, err)
	require.NotZero(t, wal.Size(), "the run is in the WAL before close")
	require.NoError(t, s.Close())

	wal, err = os.Stat(path + "-wal")
	require.NoError(t, err, "the WAL file is kept")
	assert.Zero(t, wal.Size(), "and emptied into the database")
	assert.FileExists(t, path+"-shm")

	alone := filepath.Join(t.TempDir(), "copy.db")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, data, 0o644))
	s2, err := Open(ctx, alone)
	require.NoError(t, err)
	defer s2.Close()
	_, err = s2.Run(ctx, "r1")
	assert.NoError(t, err, "a copy of norma.db alone holds the run")
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	newer := SchemaVersion + 1
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"wal db written by newer git-norma", func(t *testing.T, path string) {
			s, err := Open(ctx, path)
			require.NoError(t, err)
			_, err = s.db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, 'x')`, newer)
			require.NoError(t, err)
			require.NoError(t, s.Close())
		}},
		{"rollback-journal db", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			_, err = db.Exec(fmt.Sprintf(`CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
				INSERT INTO schema_migrations VALUES (%d, 'x');`, newer))
			require.NoError(t, err)
			require.NoError(t, db.Close())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "norma.db")
			tt.setup(t, path)
			before := fileHash(t, path)

			s, err := Open(ctx, path)
			require.ErrorIs(t, err, ErrSchemaTooNew)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), fmt.Sprintf("schema version %d but this git-norma knows only up to %d: upgrade git-norma", newer, SchemaVersion))
			assert.Equal(t, before, fileHash(t, path), "refused database must be unmodified")
		})
	}
}

func TestOpenRefusesNonDatabase(t *testing.T) {
	random := make([]byte, 8192)
	_, _ = rand.Read(random)
	tests := map[string][]byte{
		"random bytes": random,
		"text file":    []byte("this is not a database\n"),
		"bad header":   append([]byte("SQLite format 3\x00"), random[:4080]...),
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "norma.db")
			require.NoError(t, os.WriteFile(path, content, 0o644))
			before := fileHash(t, path)

			s, err := Open(context.Background(), path)
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), "mv "+path+" "+path+".bad")
			assert.Equal(t, before, fileHash(t, path))
		})
	}
}

func TestOpenPathWithSpecialCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", "norma.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	s, err := Open(context.Background(), path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = os.Stat(path)
	assert.NoError(t, err, "database must be created at the literal path")
}

func TestTimeFormat(t *testing.T) {
	loc := time.FixedZone("X", 5*3600)
	tm := time.Date(2024, 3, 9, 7, 5, 3, 120_000_000, loc)
	s := FormatTime(tm)
	assert.Equal(t, "2024-03-09T02:05:03.120Z", s)
	assert.Equal(t, "2024-03-09T02:05:03.000Z", FormatTime(tm.Truncate(time.Second)))

	got, err := ParseTime(s)
	require.NoError(t, err)
	assert.True(t, got.Equal(tm))
	assert.Equal(t, time.UTC, got.Location())

	got, err = ParseTime("2024-03-09T09:05:03+02:00")
	require.NoError(t, err)
	assert.Equal(t, "2024-03-09T07:05:03.000Z", FormatTime(got))

	_, err = ParseTime("yesterday")
	assert.Error(t, err)

	// Fixed width means string order is time order.
	a, b := FormatTime(tm), FormatTime(tm.Add(880*time.Millisecond))
	assert.Less(t, a, b)
}

// SQLite finds a file sound without one of our tables; IntegrityCheck does not.
func TestIntegrityCheckFindsAMissingTable(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "norma.db"))
	require.NoError(t, err)
	defer s.Close()
	res, err := s.IntegrityCheck(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", res)
	_, err = s.db.ExecContext(ctx, `DROP TABLE steps`)
	require.NoError(t, err)
	_, err = s.db.ExecContext(ctx, `DROP INDEX idx_runs_status`)
	require.NoError(t, err)
	res, err = s.IntegrityCheck(ctx)
	require.NoError(t, err)
	require.Equal(t, "missing index idx_runs_status, table steps", res)
}

// TestMigrationToTypedRuns: a version-2 database, whose runs kept their facts as kv_run JSON,
// opens with every fact in its column and only the free-form extras left in kv_run; a value a
// hand edit broke is dropped, never carried into a column that decides a landing.
func TestMigrationToTypedRuns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "norma.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	for _, m := range migrations[:2] {
		_, err = db.Exec(m)
		require.NoError(t, err)
	}
	head, landed := strings.Repeat("a", 40), strings.Repeat("b", 40)
	_, err = db.Exec(`INSERT INTO schema_migrations VALUES (1, 'x'), (2, 'x');
		INSERT INTO runs(run_id, created_at, goal, status, run_dir) VALUES
			('r-landed', '2026-01-01T00:00:00Z', 'g', 'passed', 'd'),
			('r-check', '2026-01-02T00:00:00Z', 'g', 'failed', 'd'),
			('r-died', '2026-01-03T00:00:00Z', 'g', 'running', 'd'),
			('r-edited', '2026-01-04T00:00:00Z', 'g', 'passed', 'd');
		INSERT INTO kv_run(run_id, key, value_json) VALUES
			('r-landed', 'task_id', '"norma-1"'), ('r-landed', 'pass_head', '"` + head + `"'),
			('r-landed', 'landed_commit', '"` + landed + `"'), ('r-landed', 'claim_intent', 'true'),
			('r-landed', 'claimed', 'false'), ('r-landed', 'stop_reason', '"none"'),
			('r-landed', 'ended_at', '"2026-01-01T00:01:00Z"'), ('r-landed', 'branch', '"norma/task/norma-1"'),
			('r-check', 'task_id', '"norma-1"'), ('r-check', 'kind', '"check"'), ('r-check', 'head', '"` + head + `"'),
			('r-died', 'task_id', '"norma-2"'), ('r-died', 'claim_intent', 'true'), ('r-died', 'claimed', 'true'),
			('r-edited', 'task_id', '"norma-3"'), ('r-edited', 'pass_head', '"HEAD~1"'), ('r-edited', 'claim_intent', 'true');`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	runs, err := s.RecentRuns(ctx, 0)
	require.NoError(t, err)
	got := map[string]Run{}
	for _, r := range runs {
		got[r.ID] = r
	}
	r := got["r-landed"]
	assert.Equal(t, []string{"run", "norma-1", head, landed, ClaimReleased, "none"},
		[]string{r.Kind, r.TaskID, r.PassHead, r.LandedCommit, r.Claim, r.StopReason})
	assert.Equal(t, "2026-01-01T00:01:00Z", r.EndedAt.UTC().Format(time.RFC3339))
	r = got["r-check"]
	assert.Equal(t, []string{KindCheck, head, ""}, []string{r.Kind, r.Head, r.Claim})
	assert.Equal(t, ClaimHeld, got["r-died"].Claim)
	r = got["r-edited"]
	assert.Equal(t, []string{"", ClaimIntent}, []string{r.PassHead, r.Claim}, "a broken pass_head is dropped")
	held, err := s.RunsWithClaim(ctx, ClaimHeld)
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, "r-died", held[0].ID)

	kv, err := s.KV(ctx, "r-landed")
	require.NoError(t, err)
	assert.Equal(t, []string{"branch"}, slices.Collect(maps.Keys(kv)), "only the extras stay in kv_run")
}

// The record that an unshielded process ran keeps its first mark, reads back, is put back
// whole by a restore, and goes only when cleared.
func TestUnshieldedRecord(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t)
	_, ok, err := s.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a new store has had no unshielded process")

	first := Unshielded{At: time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC), What: "run r-1: agents unconfined"}
	require.NoError(t, s.Facts().MarkUnshielded(ctx, first))
	require.NoError(t, s.Facts().MarkUnshielded(ctx, Unshielded{At: first.At.Add(time.Hour), What: "run r-2"}))
	got, ok, err := s.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, first.What, got.What, "the first mark stays")
	assert.True(t, first.At.Equal(got.At))

	_, err = s.db.ExecContext(ctx, `UPDATE store_facts SET value_json = '"x"'`)
	require.NoError(t, err)
	got, ok, err = s.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "a record that does not decode still counts")
	assert.Contains(t, got.What, "does not read back")
	require.NoError(t, s.Facts().RestoreUnshielded(ctx, first))
	got, _, err = s.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.What, got.What)

	require.NoError(t, s.Facts().ClearUnshielded(ctx))
	_, ok, err = s.Facts().UnshieldedSince(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
}

// git-norma's schema has no trigger: one found when the store is opened is someone else's,
// and goes.
func TestOpenDropsTriggers(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t)
	_, err := s.db.ExecContext(ctx, `CREATE TRIGGER forge AFTER INSERT ON runs BEGIN UPDATE runs SET status = 'passed'; END`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	var n int
	require.NoError(t, s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'trigger'`).Scan(&n))
	assert.Zero(t, n)
}
