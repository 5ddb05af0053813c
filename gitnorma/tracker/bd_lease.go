package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Leaser is a tracker that keeps the leases of claims itself, as bd does from 1.3: a claim
// takes a lease (BDLeaseTTL), `bd heartbeat` renews it without a Dolt commit, and `bd
// reclaim` gives a task back once its lease has been stale for a grace period, in one
// transaction. A task whose Task.LeaseExpires is set is leased this way; bd 1.0.5 prints no
// such field and has neither command.
type Leaser interface {
	// Heartbeat renews the lease of a claim the actor holds; it fails once the lease was
	// reclaimed or the task closed.
	Heartbeat(ctx context.Context, id string) error
	// Reclaim gives the task back (open, nobody's) when its lease ran out more than grace ago,
	// and says whether it did.
	Reclaim(ctx context.Context, id string, grace time.Duration) (bool, error)
}

// BDLeaseTTL is how long a claim of bd 1.3 holds without a heartbeat (its
// internal/storage/issueops.DefaultLeaseTTL); bd has no setting for it.
const BDLeaseTTL = 5 * time.Minute

var _ Leaser = (*BD)(nil)

// Heartbeat runs `bd heartbeat <id> --json`, as the worker's actor (BEADS_ACTOR).
func (b *BD) Heartbeat(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	_, err := b.call(ctx, []string{"heartbeat", id, "--json"})
	return err
}

// Reclaim runs `bd reclaim --id <id> --older-than <grace> --json`: bd reverts the task only if
// its lease is stale, and records the previous owner.
func (b *BD) Reclaim(ctx context.Context, id string, grace time.Duration) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	res, err := b.call(ctx, []string{"reclaim", "--id", id, "--older-than", grace.String(), "--json"})
	if err != nil {
		return false, err
	}
	var out struct {
		Reclaimed []struct {
			ID string `json:"id"`
		} `json:"reclaimed"`
	}
	if err := json.Unmarshal(res.stdout, &out); err != nil {
		return false, res.errorf(fmt.Sprintf("unreadable output: %v", err))
	}
	for _, r := range out.Reclaimed {
		if r.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// LeaseLost says a failed Heartbeat means the claim is no longer the caller's — reclaimed,
// closed, or held by another (bd 1.3: "issue not claimable: ...", "issue already claimed by
// ...") — rather than that bd could not be reached.
func LeaseLost(err error) bool {
	var ce *CallError
	if !errors.As(err, &ce) || len(ce.Args) == 0 || ce.Args[0] != "heartbeat" {
		return false
	}
	msg := ce.Message + "\n" + ce.Stderr
	return strings.Contains(msg, "not claimable") || strings.Contains(msg, "already claimed by")
}
