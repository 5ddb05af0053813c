package gitnorma

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/guard"
	"github.com/git-norma/git-norma/gitnorma/tracker"
)

// stampedTracker is the tracker as git-norma uses it: every change (with bd, which may touch
// .beads/ even to read, every call) runs under .norma/locks/backlog.lock and leaves the
// backlog's fingerprint in backlog.stamp, which the workspace guard compares against: a
// parallel run's claim, or `git norma task add`, is not taken for an agent writing the
// backlog. A change by anyone else found before a call (which would re-stamp it) rewrites
// backlog.outside, which the guard watches too.
type stampedTracker struct {
	inner tracker.Tracker
	root  string
	// stampReads: reads are stamped too (bd).
	stampReads bool
}

var _ tracker.Tracker = stampedTracker{}

func (s stampedTracker) locked(ctx context.Context, stamp bool, call func() error) error {
	if !stamp {
		return call()
	}
	unlock, err := flock.Wait(ctx, backlogLockPath(s.root))
	if err != nil {
		return err
	}
	defer unlock()
	if stampedBefore(s.root) && !backlogAsLeft(s.root) {
		markOutsideChange(s.root) // before this call rewrites (and so hides) it
	}
	err = call()
	writeBacklogStamp(s.root)
	return err
}

func (s stampedTracker) Create(ctx context.Context, t tracker.NewTask) (out tracker.Task, err error) {
	err = s.locked(ctx, true, func() (e error) { out, e = s.inner.Create(ctx, t); return e })
	return out, err
}

func (s stampedTracker) Get(ctx context.Context, id string) (out tracker.Task, err error) {
	err = s.locked(ctx, s.stampReads, func() (e error) { out, e = s.inner.Get(ctx, id); return e })
	return out, err
}

func (s stampedTracker) List(ctx context.Context) (out []tracker.Task, err error) {
	err = s.locked(ctx, s.stampReads, func() (e error) { out, e = s.inner.List(ctx); return e })
	return out, err
}

func (s stampedTracker) Ready(ctx context.Context) (out []tracker.Task, err error) {
	err = s.locked(ctx, s.stampReads, func() (e error) { out, e = s.inner.Ready(ctx); return e })
	return out, err
}

// Heads returns the tasks' heads where the tracker keeps them (the embedded backlog); ok is
// false for one that does not (bd).
func (s stampedTracker) Heads(ctx context.Context) (heads []tracker.Head, ok bool, err error) {
	hs, ok := s.inner.(tracker.HeadKeeper)
	if !ok {
		return nil, false, nil
	}
	err = s.locked(ctx, s.stampReads, func() (e error) { heads, e = hs.Heads(ctx); return e })
	return heads, true, err
}

// GetMany reads the tasks with ids, in that order: at once where the tracker can (the
// embedded backlog), one by one otherwise.
func (s stampedTracker) GetMany(ctx context.Context, ids []string) (out []tracker.Task, err error) {
	gm, ok := s.inner.(tracker.HeadKeeper)
	if !ok {
		for _, id := range ids {
			t, err := s.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	}
	err = s.locked(ctx, s.stampReads, func() (e error) { out, e = gm.GetMany(ctx, ids); return e })
	return out, err
}

// Scan passes a scan on to a tracker that offers one (the embedded backlog), and lists every
// task otherwise (bd).
func (s stampedTracker) Scan(ctx context.Context, fn func(tracker.Task) bool) error {
	sc, ok := s.inner.(scanner)
	if !ok {
		tasks, err := s.List(ctx)
		for _, t := range tasks {
			if !fn(t) {
				break
			}
		}
		return err
	}
	return s.locked(ctx, s.stampReads, func() error { return sc.Scan(ctx, fn) })
}

// KeepsStateApart says whether the tracker keeps git-norma's state apart from the notes.
func (s stampedTracker) KeepsStateApart() bool { return keepsStateApart(s.inner) }

// ClaimWithState passes a claim carrying git-norma's state on to a tracker that keeps it
// apart, and makes a plain claim otherwise.
func (s stampedTracker) ClaimWithState(ctx context.Context, id, actor string, state json.RawMessage) (out tracker.Task, err error) {
	k, ok := s.inner.(tracker.StateKeeper)
	if !ok || state == nil {
		return s.Claim(ctx, id, actor)
	}
	err = s.locked(ctx, true, func() (e error) { out, e = k.ClaimWithState(ctx, id, actor, state); return e })
	return out, err
}

// errNoLeases: the backlog has no leases of its own to renew or reclaim.
var errNoLeases = errors.New("the backlog keeps no leases of its own")

// Heartbeat passes a lease's renewal on to a tracker that keeps leases (tracker.Leaser).
func (s stampedTracker) Heartbeat(ctx context.Context, id string) error {
	l, ok := s.inner.(tracker.Leaser)
	if !ok {
		return errNoLeases
	}
	return s.locked(ctx, true, func() error { return l.Heartbeat(ctx, id) })
}

// Reclaim passes a reclaim on to a tracker that keeps leases (tracker.Leaser).
func (s stampedTracker) Reclaim(ctx context.Context, id string, grace time.Duration) (ok bool, err error) {
	l, isLeaser := s.inner.(tracker.Leaser)
	if !isLeaser {
		return false, errNoLeases
	}
	err = s.locked(ctx, true, func() (e error) { ok, e = l.Reclaim(ctx, id, grace); return e })
	return ok, err
}

// CloseForced passes a forced close on to a tracker that takes one.
func (s stampedTracker) CloseForced(ctx context.Context, id, reason string) error {
	fc, ok := s.inner.(tracker.ForceCloser)
	if !ok {
		return s.SetStatus(ctx, id, tracker.StatusClosed, reason)
	}
	return s.locked(ctx, true, func() error { return fc.CloseForced(ctx, id, reason) })
}

func (s stampedTracker) SetStatus(ctx context.Context, id, status, reason string) error {
	return s.locked(ctx, true, func() error { return s.inner.SetStatus(ctx, id, status, reason) })
}

func (s stampedTracker) Claim(ctx context.Context, id, actor string) (out tracker.Task, err error) {
	err = s.locked(ctx, true, func() (e error) { out, e = s.inner.Claim(ctx, id, actor); return e })
	return out, err
}

func (s stampedTracker) Update(ctx context.Context, id string, u tracker.Update) error {
	return s.locked(ctx, true, func() error { return s.inner.Update(ctx, id, u) })
}

func (s stampedTracker) RemoveDependency(ctx context.Context, issue, dependsOn string) error {
	return s.locked(ctx, true, func() error { return s.inner.RemoveDependency(ctx, issue, dependsOn) })
}

func (s stampedTracker) AddDependency(ctx context.Context, issue, dependsOn, depType string) error {
	return s.locked(ctx, true, func() error { return s.inner.AddDependency(ctx, issue, dependsOn, depType) })
}

// backlogFingerprint is a line (name, size, mode, time) for issues.jsonl and each entry of
// .beads/ but bd's bookkeeping: a few stat calls, never a walk.
func backlogFingerprint(root string) []string {
	dir := filepath.Join(root, ".beads")
	lines := []string{guard.StatLine(filepath.Join(dir, "issues.jsonl"))}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !bdBookkeeping[e.Name()] {
			lines = append(lines, guard.StatLine(filepath.Join(dir, e.Name())))
		}
	}
	sort.Strings(lines)
	return lines
}

// bdBookkeeping are files bd rewrites on its own account, reads included (bd show writes
// last-touched): a change says nothing of an agent's edit. The directory .beads itself is
// left out too: its time moves whenever bd replaces one of them.
var bdBookkeeping = map[string]bool{"last-touched": true, "export-state.json": true}

func backlogLockPath(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.lock")
}

// backlogOutsidePath is rewritten whenever git-norma finds the backlog changed by someone
// else; the workspace guard watches it.
func backlogOutsidePath(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.outside")
}

func stampedBefore(root string) bool {
	_, err := os.Stat(backlogStampPath(root))
	return err == nil
}

// markOutsideChange rewrites backlog.outside whole, through a temporary file and a rename.
// Best effort.
func markOutsideChange(root string) {
	path := backlogOutsidePath(root)
	if os.WriteFile(path+".tmp", []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600) == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

func backlogStampPath(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.stamp")
}

// writeBacklogStamp records the backlog as git-norma left it. Best effort: without a stamp the
// guard is only stricter. It is rewritten in place: it is only read under backlog.lock, which
// its writer holds, and one torn by a crash reads as "changed since", the strict side.
func writeBacklogStamp(root string) {
	now := strings.Join(backlogFingerprint(root), "\n")
	if old, err := os.ReadFile(backlogStampPath(root)); err != nil || string(old) != now {
		_ = os.WriteFile(backlogStampPath(root), []byte(now), 0o600)
	}
}

// backlogAsLeft reports whether the backlog is exactly as git-norma's last call left it.
func backlogAsLeft(root string) bool {
	stamp, err := os.ReadFile(backlogStampPath(root))
	return err == nil && string(stamp) == strings.Join(backlogFingerprint(root), "\n")
}
