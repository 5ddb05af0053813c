package worktree

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreWorktreeConfigReadsNoPipe: restoreWorktreeConfig, called on its own (without
// removeOddFiles before it), neither blocks on a pipe an agent left at config.worktree nor
// reads through a link; it puts back the file as git made it.
func TestRestoreWorktreeConfigReadsNoPipe(t *testing.T) {
	for _, tc := range []struct {
		name string
		link bool
		made []byte // config.worktree as git made it (nil: none)
	}{
		{name: "pipe, none made", made: nil},
		{name: "link to a pipe, one made", link: true, made: []byte("[core]\n\tsparseCheckout = true\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ws := wsFixture(t)
			ws.worktreeConfig = tc.made
			path := filepath.Join(ws.GitDir(), "config.worktree")
			pipe := path
			if tc.link {
				pipe = filepath.Join(t.TempDir(), "pipe")
				require.NoError(t, os.Symlink(pipe, path))
			}
			require.NoError(t, syscall.Mkfifo(pipe, 0o644))

			type result struct {
				changed bool
				err     error
			}
			done := make(chan result, 1)
			go func() {
				changed, err := ws.restoreWorktreeConfig()
				done <- result{changed, err}
			}()
			var got result
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				// Let the blocked read go (a writer opens the pipe), then fail.
				if w, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatal("restoreWorktreeConfig blocked on the pipe at config.worktree")
			}
			require.NoError(t, got.err)
			assert.True(t, got.changed)
			st, err := os.Lstat(path)
			if tc.made == nil {
				assert.True(t, os.IsNotExist(err), "config.worktree left: %v", err)
			} else {
				require.NoError(t, err)
				assert.True(t, st.Mode().IsRegular())
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(tc.made), string(data))
			}
			if tc.link {
				st, err := os.Lstat(pipe)
				require.NoError(t, err, "the link's target is not the git directory's to remove")
				assert.Equal(t, os.ModeNamedPipe, st.Mode().Type())
			}
		})
	}
}
