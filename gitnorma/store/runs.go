package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Run statuses, mirrored by a CHECK constraint on runs.status. A run is "running" until
// FinishRun records how it ended.
const (
	StatusRunning = "running"
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusStopped = "stopped"
)

// Run kinds: a run of the loop, or a `git norma check` recorded as a run of its own.
const (
	KindRun   = "run"
	KindCheck = "check"
)

// Claim states of a run's hold on its task, in the order a run goes through them: the intent
// is recorded before the tracker claim, held after it, released when the task is handed
// back or closed ("" for a run that never claimed, such as a check).
const (
	ClaimIntent   = "intent"
	ClaimHeld     = "held"
	ClaimReleased = "released"
)

// Run is one row of runs. Every fact a decision reads is a column of its own.
type Run struct {
	ID               string
	Kind             string // KindRun or KindCheck
	CreatedAt        time.Time
	Goal             string
	Status           string
	Iteration        int
	CurrentStepIndex int
	Verdict          string // "" when NULL (no verdict yet)
	RunDir           string
	TaskID           string
	StopReason       string
	EndedAt          time.Time // zero if the run has not finished
	// Head is the commit a check verified (KindCheck).
	Head string
	// PassHead and PassTree are what a run's PASS holds for: the commit and the tree id its
	// checks ran on (see RecordPass).
	PassHead, PassTree string
	// LandedCommit is the commit that landed the run's work on the target.
	LandedCommit string
	// Claim is the run's hold on its task (ClaimIntent, ClaimHeld, ClaimReleased or "").
	Claim string
	// Actor is who the claim was made as (the tracker's assignee for it); "" for the embedded
	// backlog, whose claims carry none, and for runs of older versions.
	Actor string
	// Redo marks a run made with --force: its landing goes ahead even though an earlier
	// landing of its task is on the target.
	Redo bool
	// Fork is where the run's task branch stood when the run started (see SetForkPoint).
	Fork ForkPoint
	// GuardPending says an unconfined agent's step of the run has not been looked after by the
	// fallback guard yet.
	GuardPending bool
}

// ForkPoint is where a run's task branch stood: Base, the target commit it contained when the
// run started ("" when not recorded), on branch Target; Started, whether the run (re)started
// the branch from the target, so that no run before it contributed to it.
type ForkPoint struct {
	Base, Target string
	Started      bool
}

// CreateRun records a new run, its kv extras and a "run_started" event in one transaction, so
// a run never exists without its task link or first timeline entry. Status defaults to
// StatusRunning, Kind to KindRun and CreatedAt to now.
func (s *Store) CreateRun(ctx context.Context, r Run, kv map[string]any) error {
	if r.ID == "" {
		return errors.New("store: CreateRun: empty run ID")
	}
	if r.Status == "" {
		r.Status = StatusRunning
	}
	if r.Kind == "" {
		r.Kind = KindRun
	}
	r.CreatedAt = nowOr(r.CreatedAt)
	return s.immediate(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `INSERT INTO runs(run_id, kind, created_at, goal, status, iteration,
			current_step_index, verdict, run_dir, task_id, stop_reason, ended_at, head, actor, redo)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Kind, FormatTime(r.CreatedAt), r.Goal, r.Status, r.Iteration, r.CurrentStepIndex,
			nullString(r.Verdict), r.RunDir, nullString(r.TaskID), nullString(r.StopReason), nullTime(r.EndedAt),
			nullString(r.Head), nullString(r.Actor), r.Redo); err != nil {
			return fmt.Errorf("store: create run %s: %w", r.ID, err)
		}
		for k, v := range kv {
			if err := setKV(ctx, conn, r.ID, k, v); err != nil {
				return err
			}
		}
		data := map[string]string{"run_dir": r.RunDir}
		if r.TaskID != "" {
			data["task_id"] = r.TaskID
		}
		return appendEvents(ctx, conn, r.ID, []Event{{
			TS: r.CreatedAt, Type: "run_started", Message: "run started: " + r.Goal, Data: data,
		}})
	})
}

// FinishRun records how a run ended: status, verdict ("" keeps the current one), stop reason
// ("" keeps the current one) and ended_at (zero means now), plus any closing events,
// atomically so the timeline and the run row agree.
func (s *Store) FinishRun(ctx context.Context, runID, status, verdict, stopReason string,
	endedAt time.Time, events ...Event) error {
	if status == "" {
		return errors.New("store: FinishRun: empty status")
	}
	return s.immediate(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx,
			`UPDATE runs SET status = ?, verdict = COALESCE(?, verdict), stop_reason = COALESCE(?, stop_reason),
			ended_at = ? WHERE run_id = ?`,
			status, nullString(verdict), nullString(stopReason), FormatTime(nowOr(endedAt)), runID)
		if err != nil {
			return fmt.Errorf("store: finish run %s: %w", runID, err)
		}
		if err := mustAffect(res, runID); err != nil {
			return err
		}
		return appendEvents(ctx, conn, runID, events)
	})
}

// RecordPass records what a run's PASS holds for: the commit and the tree id its checks ran
// on ("" records none, and landing then refuses it).
func (s *Store) RecordPass(ctx context.Context, runID, head, tree string) error {
	return s.setColumns(ctx, runID, "pass_head = ?, pass_tree = ?", nullString(head), nullString(tree))
}

// SetLanded records the commit that landed the run's work.
func (s *Store) SetLanded(ctx context.Context, runID, commit string) error {
	return s.setColumns(ctx, runID, "landed_commit = ?", nullString(commit))
}

// SetClaim records the run's hold on its task (ClaimIntent, ClaimHeld or ClaimReleased).
func (s *Store) SetClaim(ctx context.Context, runID, claim string) error {
	return s.setColumns(ctx, runID, "claim = ?", nullString(claim))
}

// SetForkPoint records where the run's task branch stood when the run started.
func (s *Store) SetForkPoint(ctx context.Context, runID string, fp ForkPoint) error {
	return s.setColumns(ctx, runID, "fork_base = ?, fork_started = ?, fork_target = ?", nullString(fp.Base), fp.Started, nullString(fp.Target))
}

// SetGuardPending records whether an unconfined agent's step of the run awaits the fallback
// guard.
func (s *Store) SetGuardPending(ctx context.Context, runID string, pending bool) error {
	return s.setColumns(ctx, runID, "guard_pending = ?", pending)
}

// EndedRunsGuardPending lists the runs no longer running whose guard_pending is set: checks a
// landing of theirs ran unconfined (or a parent's Verify after it), which the fallback guard
// has not looked after yet.
func (s *Store) EndedRunsGuardPending(ctx context.Context) ([]Run, error) {
	return s.queryRuns(ctx, runSelect+`WHERE guard_pending = 1 AND status <> ?`, StatusRunning)
}

func (s *Store) setColumns(ctx context.Context, runID, set string, args ...any) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `UPDATE runs SET `+set+` WHERE run_id = ?`, append(args, runID)...)
		if err != nil {
			return fmt.Errorf("store: update run %s: %w", runID, err)
		}
		return mustAffect(res, runID)
	})
}

// DeleteRun removes a run and, through ON DELETE CASCADE, its steps, events and kv rows. A
// running run is refused: retention must never pull state from under a live process.
func (s *Store) DeleteRun(ctx context.Context, runID string) error {
	return s.immediate(ctx, func(conn *sql.Conn) error {
		res, err := conn.ExecContext(ctx, `DELETE FROM runs WHERE run_id = ? AND status <> ?`, runID, StatusRunning)
		if err != nil {
			return fmt.Errorf("store: delete run %s: %w", runID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: delete run %s: %w (or it is still running)", runID, ErrNotFound)
		}
		return nil
	})
}

func mustAffect(res sql.Result, runID string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return nil
}

const runSelect = `SELECT run_id, kind, created_at, goal, status, iteration, current_step_index,
	verdict, run_dir, task_id, stop_reason, ended_at, head, pass_head, pass_tree, landed_commit, claim, actor,
	redo, fork_base, fork_started, fork_target, guard_pending
FROM runs
`

// The listing queries are named so tests can EXPLAIN exactly what runs.
const (
	recentRunsQuery     = runSelect + `ORDER BY created_at DESC LIMIT ?`
	runsForTaskQuery    = runSelect + `WHERE task_id = ? ORDER BY created_at DESC LIMIT ?`
	runsWithStatusQuery = runSelect + `WHERE status = ? ORDER BY created_at DESC`
	runsWithClaimQuery  = runSelect + `WHERE claim = ? ORDER BY created_at DESC`
)

// Run loads one run; a missing run yields an error wrapping ErrNotFound.
func (s *Store) Run(ctx context.Context, runID string) (Run, error) {
	runs, err := s.queryRuns(ctx, runSelect+`WHERE run_id = ?`, runID)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return runs[0], nil
}

// RecentRuns lists runs newest first (limit <= 0: all), walking the created_at index backwards:
// cheap however long the history.
func (s *Store) RecentRuns(ctx context.Context, limit int) ([]Run, error) {
	return s.queryRuns(ctx, recentRunsQuery, sqlLimit(limit))
}

// RunsForTask lists a task's runs newest first (limit <= 0: all), an index lookup.
func (s *Store) RunsForTask(ctx context.Context, taskID string, limit int) ([]Run, error) {
	return s.queryRuns(ctx, runsForTaskQuery, taskID, sqlLimit(limit))
}

// RunsWithStatus lists runs in a given status, newest first; recovery uses it to find runs left
// "running" by a crashed process.
func (s *Store) RunsWithStatus(ctx context.Context, status string) ([]Run, error) {
	return s.queryRuns(ctx, runsWithStatusQuery, status)
}

// RunsWithClaim lists the runs whose hold on their task is claim, newest first; recovery uses
// it to find runs that still hold their task. It is an index lookup, whatever the history.
func (s *Store) RunsWithClaim(ctx context.Context, claim string) ([]Run, error) {
	return s.queryRuns(ctx, runsWithClaimQuery, claim)
}

// sqlLimit maps "no limit" to SQLite's LIMIT -1.
func sqlLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

func (s *Store) queryRuns(ctx context.Context, query string, args ...any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var (
			r                                        Run
			created                                  string
			verdict, task, stop, ended, head         sql.NullString
			passHead, passTree, landed, claim, actor sql.NullString
			forkBase, forkTarget                     sql.NullString
		)
		if err := rows.Scan(&r.ID, &r.Kind, &created, &r.Goal, &r.Status, &r.Iteration, &r.CurrentStepIndex,
			&verdict, &r.RunDir, &task, &stop, &ended, &head, &passHead, &passTree, &landed, &claim, &actor,
			&r.Redo, &forkBase, &r.Fork.Started, &forkTarget, &r.GuardPending); err != nil {
			return nil, err
		}
		if r.CreatedAt, err = ParseTime(created); err != nil {
			return nil, err
		}
		if ended.Valid {
			if r.EndedAt, err = ParseTime(ended.String); err != nil {
				return nil, err
			}
		}
		r.Verdict, r.TaskID, r.StopReason, r.Head = verdict.String, task.String, stop.String, head.String
		r.PassHead, r.PassTree, r.LandedCommit, r.Claim = passHead.String, passTree.String, landed.String, claim.String
		r.Actor, r.Fork.Base, r.Fork.Target = actor.String, forkBase.String, forkTarget.String
		out = append(out, r)
	}
	return out, rows.Err()
}
