package gitnorma

import (
	"cmp"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// The lease of the run's claim, which the task mirror's writes carry (bd 1.0.5 has none of its
// own): each write renews it, a heartbeat between steps keeps it, and once it has run out the
// mirror asks whose the claim is before writing over it.

// writeLeased writes the state as it stands, with a lease from now. The caller holds mu.
func (m *taskMirror) writeLeased(ctx context.Context, failed func(error)) {
	if m.claimTaken(ctx) {
		return // the new holder's state is not this run's to write
	}
	lease := ""
	if m.lease > 0 {
		lease = m.now().Add(m.lease).UTC().Format(time.RFC3339)
	}
	if err := m.write(ctx, "", lease); err != nil {
		failed(err)
	}
}

// leased notes that the claim holds until lease (RFC 3339), the lease a claim, write or
// heartbeat just gave it. The caller holds mu.
func (m *taskMirror) leased(lease string) {
	if t, err := time.Parse(time.RFC3339, lease); err == nil {
		m.heldUntil = t
	}
}

// claimTaken says another worker or person holds the task's claim now (takenBy), and tells
// onLost the first time. The caller holds mu.
func (m *taskMirror) claimTaken(ctx context.Context) bool {
	// Until the lease runs out no loop reopens the task (reaper.go), so no one else can hold it.
	if m.lostTo == "" && m.takenBy != nil && !m.now().Before(m.heldUntil) {
		if m.lostTo = m.takenBy(ctx); m.lostTo != "" && m.onLost != nil {
			m.onLost(m.lostTo)
		}
	}
	return m.lostTo != ""
}

// keepLease renews the lease of the run's claim every third of it while the run works (a Do
// agent may take an hour between two steps' writes). Where the tracker leased the claim
// itself, a renewal is its heartbeat (no state write: with bd, no Dolt commit), every third of
// the shorter of the two leases. stop ends it; the run's last write then clears the lease.
func (m *taskMirror) keepLease(ctx context.Context, failed func(error)) (stop func()) {
	if m.lease <= 0 {
		return func() {}
	}
	every := m.lease / 3
	leaser, heartbeats := m.tr.(tracker.Leaser)
	heartbeats = heartbeats && m.trackerLeases
	if heartbeats {
		every = min(m.lease, tracker.BDLeaseTTL) / 3
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if heartbeats {
					sent := m.now()
					if err := leaser.Heartbeat(ctx, m.taskID); err != nil {
						if tracker.LeaseLost(err) {
							// bd gave the claim back (reclaimed, another's): as for claimTaken,
							// the writes stop here, the last one's too (finishRun).
							m.mu.Lock()
							m.lostTo = cmp.Or(m.lostTo, "reclaimed")
							m.mu.Unlock()
						}
						failed(err)
					} else {
						m.mu.Lock()
						m.leased(sent.Add(min(m.lease, tracker.BDLeaseTTL)).UTC().Format(time.RFC3339))
						m.mu.Unlock()
					}
					continue
				}
				m.mu.Lock()
				m.writeLeased(ctx, failed)
				m.mu.Unlock()
			}
		}
	})
	return sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
}

// claimState is the state a claim writes (tracker.StateKeeper.ClaimWithState): the state as it
// stands, with a first lease, marked as the claiming run's (see holdsClaim).
func (m *taskMirror) claimState(runID string) (json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state
	st.RunID = runID
	st.LeaseUntil = m.now().Add(m.lease).UTC().Format(time.RFC3339)
	st.ForeignNotes = ""
	m.leased(st.LeaseUntil)
	data, err := st.EncodeState()
	return json.RawMessage(m.redact.Apply(data)), err
}
