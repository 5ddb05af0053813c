package notes

import (
	"context"
	"fmt"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// TrackingRef is where a remote's journal is fetched to before it is merged: fetching into
// a tracking ref and merging from there is what keeps local notes from ever being overwritten.
func TrackingRef(remote string) string { return "refs/notes/remotes/" + remote + "/norma" }

// Pull fetches the remote's journal into its tracking ref and merges it into the local one
// with cat_sort_uniq (no conflicts, no entry lost). A remote without a journal is not an error.
func (j Journal) Pull(ctx context.Context, remote string) (bool, error) {
	var pulled bool
	err := j.locked(ctx, func() error {
		var err error
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
		return fmt.Errorf("there is no local journal (%s) to push yet", Ref)
	}
	err := j.push(ctx, remote)
	if err == nil || !rejected(err) {
		return err
	}
	if _, err := j.Pull(ctx, remote); err != nil {
		return err
	}
	return j.push(ctx, remote)
}

func (j Journal) push(ctx context.Context, remote string) error {
	if err := j.Git.Run(ctx, "push", "--quiet", remote, Ref+":"+Ref); err != nil {
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
		return fmt.Errorf("invalid remote name %q", remote)
	}
	if err := j.Git.Run(ctx, "check-ref-format", TrackingRef(remote)); err != nil {
		return fmt.Errorf("invalid remote name %q", remote)
	}
	if err := j.Git.Run(ctx, "remote", "get-url", remote); err != nil {
		if git.ExitCodeOf(err) == 2 {
			return fmt.Errorf("no remote named %q (see: git remote -v)", remote)
		}
		return err
	}
	return nil
}
