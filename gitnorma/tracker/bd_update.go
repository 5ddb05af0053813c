package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// defaultCloseReason is recorded when SetStatus closes a task without a reason; bd's own
// default ("Closed") would not tell who closed it.
const defaultCloseReason = "Closed by git-norma"

// SetStatus closes with `bd close` (see close) and moves to any other status with `bd update
// <id> --status <s> --json`. bd validates the status, so custom statuses configured in bd work
// too.
func (b *BD) SetStatus(ctx context.Context, id, status, reason string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if status == "" {
		return fmt.Errorf("task %s: status is empty", id)
	}
	if status == StatusClosed {
		return b.close(ctx, id, reason)
	}
	_, err := b.one(ctx, id, "update", id, "--status", status, "--json")
	return err
}

// CloseForced runs `bd close <id> --reason R --force --json`: closed though open tasks block it.
func (b *BD) CloseForced(ctx context.Context, id, reason string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return b.close(ctx, id, reason, "--force")
}

// close runs `bd close <id> --reason <reason> [flags] --json`: bd records a close reason only
// through --reason.
func (b *BD) close(ctx context.Context, id, reason string, flags ...string) error {
	if strings.TrimSpace(reason) == "" {
		reason = defaultCloseReason
	}
	args := append([]string{"close", id, "--reason", reason}, flags...)
	_, err := b.one(ctx, id, append(args, "--json")...)
	return err
}

// Claim runs `bd update <id> --claim [--actor <actor>] --json`, bd's compare-and-swap claim.
func (b *BD) Claim(ctx context.Context, id, actor string) (Task, error) {
	return b.ClaimWithState(ctx, id, actor, nil)
}

// ClaimWithState is Claim with `--metadata` in the same `bd update`: bd 1.0.5 applies the
// metadata only once the claim went through (cmd/bd/update.go).
func (b *BD) ClaimWithState(ctx context.Context, id, actor string, state json.RawMessage) (Task, error) {
	if err := checkID(id); err != nil {
		return Task{}, err
	}
	args := []string{"update", id, "--claim"}
	if actor != "" {
		args = append(args, "--actor", actor)
	}
	if state != nil {
		meta, err := stateArg(id, state)
		if err != nil {
			return Task{}, err
		}
		args = append(args, "--metadata", meta)
	}
	args = append(args, "--json")
	// A claim that lost a race on the database (workers claiming at once; the other claim
	// may have been of another task) is tried again a few times, after a random pause so the
	// workers do not collide again. Still lost, it is ErrClaimed.
	for attempt := 1; ; attempt++ {
		t, err := b.one(ctx, id, args...)
		var ce *CallError
		if err == nil || attempt == claimAttempts || !errors.As(err, &ce) || !ce.raceLost() {
			return t, err
		}
		select {
		case <-ctx.Done():
			return Task{}, err
		case <-time.After(50*time.Millisecond + rand.N(200*time.Millisecond)):
		}
	}
}

// claimAttempts bounds the tries of a claim that keeps losing races.
const claimAttempts = 3

// stateArg is the --metadata argument that sets git-norma's state: bd 1.0.5 merges the object
// into the task's metadata key by key, so other keys (people's, other tools') stay.
func stateArg(id string, state json.RawMessage) (string, error) {
	meta, err := json.Marshal(map[string]json.RawMessage{StateKey: state})
	if err != nil {
		return "", fmt.Errorf("task %s: git-norma's state: %w", id, err)
	}
	if len(meta) > MaxBDArg {
		return "", fmt.Errorf("task %s: git-norma's state is %d bytes; bd takes metadata as one command-line argument, which Linux caps at 128 KiB", id, len(meta))
	}
	return string(meta), nil
}

// KeepsStateApart: bd keeps git-norma's state in the task's metadata (StateKeeper).
func (b *BD) KeepsStateApart() bool { return true }

// Update runs one `bd update <id> [--notes N] [--metadata M] [--add-label L]...
// [--remove-label L]... [--status S] --json`, so notes, labels and status change in a single bd call.
func (b *BD) Update(ctx context.Context, id string, u Update) error {
	if err := checkID(id); err != nil {
		return err
	}
	args := []string{"update", id}
	if u.Notes != nil {
		if n := len(*u.Notes); n > MaxBDArg {
			return fmt.Errorf("task %s: notes are %d bytes; bd takes notes only as one command-line argument, which Linux caps at 128 KiB", id, n)
		}
		args = append(args, "--notes", *u.Notes)
	}
	if u.State != nil {
		meta, err := stateArg(id, u.State)
		if err != nil {
			return err
		}
		args = append(args, "--metadata", meta)
	}
	if _, err := bdLabels(slices.Concat(u.AddLabels, u.RemoveLabels)); err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	add, remove := normalizeLabels(u.AddLabels), normalizeLabels(u.RemoveLabels)
	for _, l := range add {
		if slices.Contains(remove, l) {
			return fmt.Errorf("task %s: label %q is both added and removed", id, l)
		}
		args = append(args, "--add-label", l)
	}
	for _, l := range remove {
		args = append(args, "--remove-label", l)
	}
	for _, f := range []struct {
		flag string
		val  *string
	}{{"--title", u.Title}, {"--description", u.Description}, {"--acceptance", u.Acceptance}} {
		if f.val != nil {
			args = append(args, f.flag, *f.val)
		}
	}
	if u.Priority != nil {
		args = append(args, "-p", fmt.Sprint(*u.Priority))
	}
	if u.Status != "" {
		args = append(args, "--status", u.Status)
	}
	if u.Status == StatusOpen {
		// A task handed back is nobody's: bd keeps the claim's assignee otherwise.
		args = append(args, "--assignee", "")
	}
	if len(args) == 2 {
		return nil // nothing to change; bd would print "No updates specified" as text
	}
	_, err := b.one(ctx, id, append(args, "--json")...)
	return err
}
