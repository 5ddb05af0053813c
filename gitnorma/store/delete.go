package store

import (
	"context"
	"database/sql"
	"fmt"
)

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
