package tracker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-norma/git-norma/gitnorma/flock"
)

// Lock modes: readers share, a read-modify-write excludes everyone else.
const (
	lockShared    = flock.Shared
	lockExclusive = flock.Exclusive
)

// lockFile takes a flock on path (lockShared or lockExclusive) and returns its release function.
// flock belongs to the open file, so two *JSONL values in one process exclude each other just
// like two processes do.
func lockFile(ctx context.Context, path string, how int) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create lock directory: %w", err)
	}
	unlock, err := flock.Acquire(ctx, path, 0o644, how)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return unlock, nil
}
