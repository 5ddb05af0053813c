package gitnorma

import (
	"context"
	"errors"

	"github.com/git-norma/git-norma/notes"
)

// PushNotes sends the journal (refs/notes/norma) to a remote, merging theirs first when
// needed; it never forces.
func (r *Repo) PushNotes(ctx context.Context, remote string) error {
	return notesSyncError(r.NotesJournal().Push(ctx, remote), remote)
}

// PullNotes fetches a remote's journal into refs/notes/remotes/<remote>/norma and merges it.
func (r *Repo) PullNotes(ctx context.Context, remote string) (bool, error) {
	pulled, err := r.NotesJournal().Pull(ctx, remote)
	return pulled, notesSyncError(err, remote)
}

// notesSyncError gives a failed notes push or pull its exit code and the hint for its cause:
// a malformed remote argument is a usage error (129); everything else fails the command (1).
func notesSyncError(err error, remote string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, notes.ErrInvalidRemote):
		return &Error{Kind: ErrUsage, Err: err,
			Hint: "give the name of a configured remote (see: git remote -v); for a URL or path, add it first: git remote add <name> <url>"}
	case errors.Is(err, notes.ErrNoRemote):
		return &Error{Err: err,
			Hint: "see the configured remotes with: git remote -v; add this one with: git remote add " + remote + " <url>"}
	case errors.Is(err, notes.ErrUnreachable):
		return &Error{Err: err,
			Hint: "check the remote's URL (git remote get-url " + remote + ") and that you can reach it (git ls-remote " + remote + ")"}
	case errors.Is(err, notes.ErrRejected):
		return &Error{Err: err,
			Hint: "the remote's journal moved while it was merged: fetch and merge again with: git norma notes pull " + remote + ", then push"}
	case errors.Is(err, notes.ErrNoJournal):
		return &Error{Err: err,
			Hint: "runs write the journal (git norma run); another clone's comes with: git norma notes pull " + remote}
	}
	return err
}
