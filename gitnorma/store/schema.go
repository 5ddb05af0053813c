package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SchemaVersion is the newest schema this binary understands. Open refuses
// databases whose recorded version is higher, so bump it (by appending to
// migrations, never editing an applied entry) whenever the schema changes.
const SchemaVersion = len(migrations)

// migrations[i] upgrades the schema from version i to version i+1. Entries
// are append-only: released databases have already run the earlier ones.
var migrations = [...]string{
	// Version 1: the MVP schema of the spec (§3). CHECK constraints keep
	// enum-like columns honest even when rows are written by other tools.
	`
CREATE TABLE schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
);

CREATE TABLE runs (
	run_id             TEXT PRIMARY KEY,
	created_at         TEXT NOT NULL,
	goal               TEXT NOT NULL,
	status             TEXT NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'stopped')),
	iteration          INTEGER NOT NULL DEFAULT 0,
	current_step_index INTEGER NOT NULL DEFAULT 0,
	verdict            TEXT NULL CHECK (verdict IS NULL OR verdict IN ('PASS', 'FAIL')),
	run_dir            TEXT NOT NULL
);
CREATE INDEX idx_runs_created_at ON runs(created_at);
CREATE INDEX idx_runs_status ON runs(status);

CREATE TABLE steps (
	run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
	step_index INTEGER NOT NULL,
	role       TEXT NOT NULL CHECK (role IN ('plan', 'do', 'check', 'act')),
	iteration  INTEGER NOT NULL,
	status     TEXT NOT NULL CHECK (status IN ('ok', 'fail', 'skipped')),
	step_dir   TEXT NOT NULL,
	started_at TEXT NOT NULL,
	ended_at   TEXT NULL,
	summary    TEXT NULL,
	PRIMARY KEY (run_id, step_index)
);

CREATE TABLE events (
	run_id    TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
	seq       INTEGER NOT NULL,
	ts        TEXT NOT NULL,
	type      TEXT NOT NULL,
	message   TEXT NOT NULL,
	data_json TEXT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE kv_run (
	run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	value_json TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
);
-- "runs of task X" looks up (key='task_id', value_json=<json id>).
CREATE INDEX idx_kv_run_key_value ON kv_run(key, value_json);
`,
	// Version 2: the tree id a run's PASS was checked on (its evidence's check.tree), beside
	// the commit in kv pass_head: landing refuses a tree other than the checked one.
	`
ALTER TABLE runs ADD COLUMN pass_tree TEXT NULL
	CHECK (pass_tree IS NULL OR (length(pass_tree) IN (40, 64) AND pass_tree NOT GLOB '*[^0-9a-f]*'));
`,
	// Version 3: the facts that decide landings, claims and listings become columns (they
	// were kv_run rows read back as JSON). kv_run keeps the spec's free-form extras only.
	// A value that is not what its column holds (a hand edit) is dropped, not carried: the
	// migration must not fail on it, and nothing may land on it.
	`
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run' CHECK (kind IN ('run', 'check'));
ALTER TABLE runs ADD COLUMN task_id TEXT NULL;
ALTER TABLE runs ADD COLUMN stop_reason TEXT NULL;
ALTER TABLE runs ADD COLUMN ended_at TEXT NULL;
ALTER TABLE runs ADD COLUMN head TEXT NULL
	CHECK (head IS NULL OR (length(head) IN (40, 64) AND head NOT GLOB '*[^0-9a-f]*'));
ALTER TABLE runs ADD COLUMN pass_head TEXT NULL
	CHECK (pass_head IS NULL OR (length(pass_head) IN (40, 64) AND pass_head NOT GLOB '*[^0-9a-f]*'));
ALTER TABLE runs ADD COLUMN landed_commit TEXT NULL
	CHECK (landed_commit IS NULL OR (length(landed_commit) IN (40, 64) AND landed_commit NOT GLOB '*[^0-9a-f]*'));
ALTER TABLE runs ADD COLUMN claim TEXT NULL CHECK (claim IS NULL OR claim IN ('intent', 'held', 'released'));

CREATE TEMP TABLE kv_text AS
	SELECT run_id, key, CASE WHEN json_valid(value_json) THEN value_json ->> '$' END AS v
	FROM kv_run WHERE key IN ('kind', 'task_id', 'stop_reason', 'ended_at', 'head', 'pass_head',
		'landed_commit', 'claim_intent', 'claimed');
UPDATE runs SET
	kind = CASE (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'kind') WHEN 'check' THEN 'check' ELSE 'run' END,
	task_id = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'task_id'),
	stop_reason = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'stop_reason'),
	ended_at = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'ended_at'),
	head = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'head'
		AND length(v) IN (40, 64) AND v NOT GLOB '*[^0-9a-f]*'),
	pass_head = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'pass_head'
		AND length(v) IN (40, 64) AND v NOT GLOB '*[^0-9a-f]*'),
	landed_commit = (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'landed_commit'
		AND length(v) IN (40, 64) AND v NOT GLOB '*[^0-9a-f]*'),
	claim = CASE
		WHEN (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'claimed') = 1 THEN 'held'
		WHEN (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'claimed') = 0 THEN 'released'
		WHEN (SELECT v FROM kv_text k WHERE k.run_id = runs.run_id AND k.key = 'claim_intent') = 1 THEN 'intent'
	END;
DELETE FROM kv_run WHERE key IN ('kind', 'task_id', 'stop_reason', 'ended_at', 'head', 'pass_head',
	'landed_commit', 'claim_intent', 'claimed');
DROP TABLE kv_text;
CREATE INDEX idx_runs_task_id ON runs(task_id, created_at);
CREATE INDEX idx_runs_claim ON runs(claim) WHERE claim IS NOT NULL;
CREATE INDEX idx_runs_landed_commit ON runs(landed_commit) WHERE landed_commit IS NOT NULL;
`,
	// Version 4: a step's output.json is kept with its row, so status and the journal read the
	// store (usage, title, details), never the step files or an event's message.
	`
ALTER TABLE steps ADD COLUMN output_json TEXT NULL CHECK (output_json IS NULL OR json_valid(output_json));
`,
	// Version 5: the actor a run claimed its task as (worker.id), so that recovery gives back
	// only the claims this worker made.
	`
ALTER TABLE runs ADD COLUMN actor TEXT NULL;
`,
	// Version 6: facts of the store itself, such as whether processes the kernel did not keep
	// out of it ever ran (trust.go).
	`
` + createFacts + `
`,
	// Version 7: the last facts a decision read from kv_run become columns: a run made with
	// --force (its landing goes ahead over an earlier one), where its task branch was built
	// (landing refuses a fork point the target lost), an unconfined agent's step the guard has
	// not looked after yet, and the guard's violations (run and loop refuse while one is
	// pending). As in version 3, a value a hand edit broke is dropped, not carried.
	`
ALTER TABLE runs ADD COLUMN redo INTEGER NOT NULL DEFAULT 0 CHECK (redo IN (0, 1));
ALTER TABLE runs ADD COLUMN fork_base TEXT NULL
	CHECK (fork_base IS NULL OR (length(fork_base) IN (40, 64) AND fork_base NOT GLOB '*[^0-9a-f]*'));
ALTER TABLE runs ADD COLUMN fork_started INTEGER NOT NULL DEFAULT 0 CHECK (fork_started IN (0, 1));
ALTER TABLE runs ADD COLUMN fork_target TEXT NULL;
ALTER TABLE runs ADD COLUMN guard_pending INTEGER NOT NULL DEFAULT 0 CHECK (guard_pending IN (0, 1));

CREATE TABLE guard_violations (
	run_id     TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
	task_id    TEXT NOT NULL,
	paths_json TEXT NOT NULL CHECK (json_valid(paths_json) AND json_type(paths_json) = 'array'),
	at         TEXT NOT NULL,
	cleared_at TEXT NULL
);

` + carryKV + `
DELETE FROM kv_run WHERE key IN ('redo', 'fork_point', 'guard_pending', 'guard_violation');
`,
}

// migrate applies pending migrations one transaction each, re-reading the
// version under the write lock so two processes opening a fresh file at the
// same time cannot both apply the same migration.
func (s *Store) migrate(ctx context.Context) error {
	for i, m := range migrations {
		target := i + 1
		err := s.immediate(ctx, func(conn *sql.Conn) error {
			v, err := readVersion(ctx, conn)
			if err != nil {
				return err
			}
			if v > SchemaVersion {
				return schemaTooNew(s.path, v)
			}
			if v >= target {
				return nil
			}
			if _, err := conn.ExecContext(ctx, m); err != nil {
				return fmt.Errorf("migration %d: %w", target, err)
			}
			_, err = conn.ExecContext(ctx,
				`INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)`,
				target, FormatTime(time.Now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// createFacts makes the table of the store's facts of itself (version 6); Facts makes it again
// should an agent have dropped it.
const createFacts = `CREATE TABLE IF NOT EXISTS store_facts (
	key        TEXT PRIMARY KEY,
	value_json TEXT NOT NULL CHECK (json_valid(value_json))
);`
