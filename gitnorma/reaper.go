package gitnorma

import (
	"context"
	"fmt"
	"time"

	"github.com/git-norma/git-norma/gitnorma/redact"
	"github.com/git-norma/git-norma/gitnorma/taskstate"
	"github.com/git-norma/git-norma/gitnorma/tracker"
	"github.com/git-norma/git-norma/loop"
)

// Leases of claims, with bd shared by workers on several machines. bd 1.0.5 has none of its
// own, so a run keeps one in its task state (taskstate.State.LeaseUntil), renewed with every write
// and every third of worker.lease between them. From bd 1.3 a claim carries bd's own lease
// (tracker.Leaser): bd heartbeat renews it, and bd reclaim, which refuses a lease renewed
// meanwhile, gives the task back. Once a dead worker's lease has run out any loop reopens the
// task, and only the step in flight is lost. Machines' clocks are compared: leaseSkew allows
// for them being apart (keep them in sync with NTP).
const leaseSkew = 30 * time.Second

// leases are the claims' leases: how long one lasts here, and who reopens a task whose lease
// ran out.
type leases struct {
	// length is how long a run's claim is leased: with bd only (an embedded backlog's claims
	// are in this clone's file, and the loop's own recovery gives back what its dead runs left).
	length   time.Duration
	workerID string
	now      func() time.Time
	redact   redact.Redactor
}

func (a *App) leases() leases {
	l := leases{workerID: a.Config.WorkerID(), now: a.Now, redact: a.redact}
	if a.TrackerKind() == "beads" {
		l.length = time.Duration(a.Config.Worker.Lease)
	}
	return l
}

// reap reopens the tasks in progress whose lease ran out (their worker died or lost touch), in
// one write that also clears the lease. Should the worker come back, it does not land once
// another holds the claim (checkStillOpen); if it lands first, the other's run finds the
// landing and closes the task instead of landing it twice.
func (l leases) reap(ctx context.Context, tr tracker.Tracker, live loop.LiveFunc) error {
	gone, err := l.expired(ctx, tr)
	if err != nil {
		return err
	}
	now := l.now()
	for _, e := range gone {
		if e.byTracker {
			reclaim(ctx, tr, e, live)
			continue
		}
		// Looked at again just before the write: another loop may have reaped and claimed it
		// since the list (bd has no conditional update, so the window narrows, not closes).
		if cur, err := tr.Get(ctx, e.task.ID); err != nil || cur.Status != tracker.StatusInProgress || cur.Assignee != e.task.Assignee || !sameLease(tr, cur, e) {
			continue
		}
		st := e.state
		st.LeaseUntil = ""
		st.Journal = append(st.Journal, taskstate.JournalLine{TS: now.UTC().Format(time.RFC3339Nano), Run: st.RunID, Role: "lease",
			Status: "expired", Summary: fmt.Sprintf("the claim of %s ran out at %s; reopened by %s", loop.OrDash(e.task.Assignee), e.until.Format(time.RFC3339), l.workerID)})
		u, _, err := taskstate.Write(st, l.redact, nil)
		if err != nil {
			return err
		}
		u.Status = tracker.StatusOpen
		if err := tr.Update(ctx, e.task.ID, u); err != nil {
			say(live, e.task.ID, "reopening task %s, whose lease ran out, failed: %v", e.task.ID, err)
			continue
		}
		sayReopened(live, e)
	}
	return nil
}

func sayReopened(live loop.LiveFunc, e expiredLease) {
	say(live, e.task.ID, "reopened task %s: the claim of %s ran out at %s (its worker stopped renewing it)", e.task.ID, loop.OrDash(e.task.Assignee), e.until.Format(time.RFC3339))
}

// reclaim gives back a task whose lease the tracker keeps (bd from 1.3), which checks the lease
// is stale and reopens the task in one transaction (bd refuses anyone else's status change of
// a leased claim). Nothing else is written: a run may claim the task the moment it is open.
func reclaim(ctx context.Context, tr tracker.Tracker, e expiredLease, live loop.LiveFunc) {
	l, ok := tr.(tracker.Leaser)
	if !ok {
		return
	}
	done, err := l.Reclaim(ctx, e.task.ID, leaseSkew)
	if err != nil {
		say(live, e.task.ID, "reclaiming task %s, whose lease ran out, failed: %v", e.task.ID, err)
		return
	}
	if done {
		sayReopened(live, e)
	}
}

// expiredLease is a task in progress whose lease ran out.
type expiredLease struct {
	task  tracker.Task
	state taskstate.Stored
	until time.Time
	// byTracker says the lease is the tracker's own (Task.LeaseExpires), not the state's.
	byTracker bool
}

// expired lists the tasks in progress whose lease ran out more than leaseSkew ago. Only
// tasks git-norma leased count: a task a person claimed has none.
func (l leases) expired(ctx context.Context, tr tracker.Tracker) ([]expiredLease, error) {
	if l.length == 0 {
		return nil, nil
	}
	tasks, err := tr.List(ctx)
	if err != nil {
		return nil, err
	}
	var gone []expiredLease
	for _, t := range tasks {
		if t.Status != tracker.StatusInProgress || len(t.State) == 0 {
			continue
		}
		// A person's claim has no lease in its state (even where bd leases every claim): it is
		// never given back.
		st, err := taskstate.Read(tr, t)
		if err != nil || st.LeaseUntil == "" {
			continue
		}
		e := expiredLease{task: t, state: st, byTracker: t.LeaseExpires != nil}
		if e.byTracker {
			e.until = *t.LeaseExpires
		} else if e.until, err = time.Parse(time.RFC3339, st.LeaseUntil); err != nil {
			continue
		}
		if e.until = e.until.UTC(); l.now().After(e.until.Add(leaseSkew)) {
			gone = append(gone, e)
		}
	}
	return gone, nil
}

// sameLease says t still holds the lease that ran out.
func sameLease(tr tracker.Tracker, t tracker.Task, e expiredLease) bool {
	st, err := taskstate.Read(tr, t)
	return err == nil && st.LeaseUntil == e.state.LeaseUntil
}
