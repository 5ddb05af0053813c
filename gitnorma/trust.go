package gitnorma

import (
	"context"
	"fmt"
	"time"

	"github.com/git-norma/git-norma/gitnorma/store"
)

// A PASS read from the run store is evidence only while no process that could write the store
// has run: the kernel keeps confined agents and check commands out of it, but an unconfined one
// (mode off, no Landlock, sandbox.allow_write opening the repository) could have written any
// record, a PASS of another task included. Before the first such process starts, the store
// records that one ran (store.Unshielded; the fallback guard puts it back should an agent
// remove it). From then on a landing checks the tree again and the hooks' gate takes no PASS
// from the store, until the user vouches for every record (git norma resume --trust-store).

// markUnshielded records, before it starts, that a process the kernel does not keep out of the
// store runs here; what says which.
func markUnshielded(ctx context.Context, st *store.Store, now time.Time, what string) error {
	if err := st.Facts().MarkUnshielded(ctx, store.Unshielded{At: now, What: what}); err != nil {
		return fmt.Errorf("record that %s: %w", what, err)
	}
	return nil
}

// markUnshieldedIn is markUnshielded on the repository's store, made if need be.
func markUnshieldedIn(ctx context.Context, repo *Repo, now time.Time, what string) error {
	st, err := repo.OpenStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return markUnshielded(ctx, st, now, what)
}

// shieldsNow says the kernel keeps what is started now out of the repository's shared places,
// the run store among them.
func (cf confiner) shieldsNow() bool {
	c, err := cf.withoutProbe()
	return err == nil && cf.shields(c)
}

// storeDistrust says why a PASS read from st is a hint rather than evidence, "" when it is
// evidence: the kernel keeps no agent out of the store now (shieldedNow false), an unconfined
// process ran here since the store was last vouched for, or a guard violation awaits the user.
func storeDistrust(ctx context.Context, st *store.Store, shieldedNow bool) string {
	if !shieldedNow {
		return "agents could write the run store (they run unconfined here)"
	}
	if u, ok, err := st.Facts().UnshieldedSince(ctx); err != nil {
		return "the run store could not be read: " + err.Error()
	} else if ok {
		return fmt.Sprintf("processes the kernel did not keep out of the run store ran here since %s (%s)", u.At.Local().Format(time.DateTime), u.What)
	}
	if pending, err := pendingViolations(ctx, st); err != nil {
		return "the run store could not be read: " + err.Error()
	} else if len(pending) > 0 {
		return "a guard violation awaits you: " + pending[0].Summary()
	}
	return ""
}

// TrustStore removes the record that unconfined processes ran here: the user vouches for every
// PASS in the store (git norma status lists them). It returns the record removed, if any.
func (r *Repo) TrustStore(ctx context.Context) (store.Unshielded, bool, error) {
	var u store.Unshielded
	var had bool
	err := r.withStore(ctx, func(st *store.Store) error {
		var err error
		if u, had, err = st.Facts().UnshieldedSince(ctx); err != nil || !had {
			return err
		}
		return st.Facts().ClearUnshielded(ctx)
	})
	return u, had, err
}

// doctorTrust says when a PASS read from the store is not evidence because unconfined
// processes ran here.
func doctorTrust(ctx context.Context, st *store.Store, rep *DoctorReport) {
	if u, ok, err := st.Facts().UnshieldedSince(ctx); err == nil && ok {
		rep.add("database", "warn", fmt.Sprintf("unconfined processes ran here since %s (%s): a PASS read from the run store is checked again before it lands, and the hooks do not take it",
			u.At.Local().Format(time.DateTime), u.What),
			"once you have looked at the PASSes recorded here (git norma status), vouch for them: git norma resume --trust-store")
	}
}
