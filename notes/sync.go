package notes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// Why a Push or Pull failed, for callers to tell apart with errors.Is and point the user to the
// right way out. Other failures (a hook on the remote declining the push, say) carry none.
var (
	// ErrInvalidRemote: the argument is not a remote name at all (a path, a URL, an option).
	ErrInvalidRemote = errors.New("not a remote name")
	// ErrNoRemote: no remote of that name is configured.
	ErrNoRemote = errors.New("no such remote")
	// ErrUnreachable: git could not talk to the remote (a wrong URL, no network, no access).
	ErrUnreachable = errors.New("remote unreachable")
	// ErrRejected: the remote refused the push as not a fast-forward, even after merging its
	// journal (another clone pushed in between).
	ErrRejected = errors.New("push rejected")
	// ErrNoJournal: there is no local journal to push.
	ErrNoJournal = errors.New("no local journal")
)

// syncError is a failure of one of the kinds above; its message is err's.
type syncError struct{ kind, err error }

func (e *syncError) Error() string   { return e.err.Error() }
func (e *syncError) Unwrap() []error { return []error{e.kind, e.err} }

func kindOf(kind error, format string, args ...any) error {
	return &syncError{kind: kind, err: fmt.Errorf(format, args...)}
}

// gitFatal is the first line git printed on stderr, without its "fatal: ", or err's message.
func gitFatal(err error) string {
	for _, l := range strings.Split(git.StderrOf(err), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return strings.TrimPrefix(l, "fatal: ")
		}
	}
	return err.Error()
}

// unreachable says whether a failed fetch or push never got to talk to the remote: git exits
// 128 then (a rejected push exits 1).
func unreachable(remote string, err error) error {
	if git.ExitCodeOf(err) != 128 {
		return nil
	}
	return kindOf(ErrUnreachable, "cannot reach remote %q: %s", remote, gitFatal(err))
}

// TrackingRef is where a remote's journal is fetched to before it is merged: fetching into
// a tracking ref and merging from there is what keeps local notes from ever being overwritten.
func TrackingRef(remote string) string { return "refs/notes/remotes/" + remote + "/norma" }

// Pull fetches the remote's journal into its tracking ref and merges it into the local one
// with cat_sort_uniq (no conflicts, no entry lost). A remote without a journal is not an error.
func (j Journal) Pull(ctx context.Context, remote string) (pulled bool, err error) {
	err = j.locked(ctx, func() (err error) {
		pulled, err = j.pull(ctx, remote)
		return err
	})
	return pulled, err
}

func (j Journal) pull(ctx context.Context, remote string) (bool, error) {
	if err := j.checkRemote(ctx, remote); err != nil {
		return false, err
	}
	tracking := TrackingRef(remote)
	if err := j.Git.Run(ctx, "fetch", "--quiet", "--no-write-fetch-head", remote, "+"+Ref+":"+tracking); err != nil {
		if strings.Contains(err.Error(), "couldn't find remote ref") {
			return false, nil
		}
		if u := unreachable(remote, err); u != nil {
			return false, u
		}
		return false, fmt.Errorf("fetch %s from %s: %w", Ref, remote, err)
	}
	if err := j.Git.Run(ctx, "rev-parse", "--verify", "-q", Ref); err != nil {
		// No local journal yet: adopt the remote's as it is.
		return true, j.Git.Run(ctx, "update-ref", Ref, tracking, "")
	}
	if err := j.Git.Run(ctx, "notes", "--ref", Ref, "merge", "--quiet", "--strategy=cat_sort_uniq", tracking); err != nil {
		return false, fmt.Errorf("merge %s into %s: %w", tracking, Ref, err)
	}
	return true, nil
}

// Push sends the local journal to the remote as a fast-forward. When the remote has entries we
// lack, the push is rejected; then the remote journal is pulled and merged and the push
// retried once. A forced push is never used: it could drop another clone's entries.
func (j Journal) Push(ctx context.Context, remote string) error {
	if err := j.checkRemote(ctx, remote); err != nil {
		return err
	}
	if err := j.Git.Run(ctx, "rev-parse", "--verify", "-q", Ref); err != nil {
		return kindOf(ErrNoJournal, "there is no local journal (%s) to push yet", Ref)
	}
	err := j.push(ctx, remote)
	if err == nil || !rejected(err) {
		return err
	}
	if _, err := j.Pull(ctx, remote); err != nil {
		return err
	}
	if err = j.push(ctx, remote); err == nil || !rejected(err) {
		return err
	}
	return &syncError{kind: ErrRejected, err: err}
}

func (j Journal) push(ctx context.Context, remote string) error {
	if err := j.Git.Run(ctx, "push", "--quiet", remote, Ref+":"+Ref); err != nil {
		if u := unreachable(remote, err); u != nil {
			return u
		}
		return fmt.Errorf("push %s to %s: %w", Ref, remote, err)
	}
	return nil
}

func rejected(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "[rejected]") || strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first")
}

// checkRemote accepts only a configured remote name: it becomes part of a ref name and must
// never be taken for an option.
func (j Journal) checkRemote(ctx context.Context, remote string) error {
	if remote == "" || strings.HasPrefix(remote, "-") {
		return kindOf(ErrInvalidRemote, "invalid remote name %q", remote)
	}
	if err := j.Git.Run(ctx, "check-ref-format", TrackingRef(remote)); err != nil {
		return kindOf(ErrInvalidRemote, "invalid remote name %q", remote)
	}
	if err := j.Git.Run(ctx, "remote", "get-url", remote); err != nil {
		if git.ExitCodeOf(err) == 2 {
			return kindOf(ErrNoRemote, "no remote named %q", remote)
		}
		return err
	}
	return nil
}
