package gitnorma

import (
	"context"
)

// PushNotes sends the journal (refs/notes/norma) to a remote, merging theirs first when
// needed; it never forces.
func (a *App) PushNotes(ctx context.Context, remote string) error {
	if err := a.NotesJournal().Push(ctx, remote); err != nil {
		return failf("fetch and merge first with: git norma notes pull "+remote, "%v", err)
	}
	return nil
}

// PullNotes fetches a remote's journal into refs/notes/remotes/<remote>/norma and merges it.
func (a *App) PullNotes(ctx context.Context, remote string) (bool, error) {
	pulled, err := a.NotesJournal().Pull(ctx, remote)
	return pulled, withCode(ExitFail, err)
}
