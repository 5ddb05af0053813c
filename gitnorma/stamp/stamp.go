// Package stamp keeps the backlog's stamp: every change of the backlog by git-norma (with bd,
// which may touch .beads/ even to read, every call) runs under .norma/locks/backlog.lock and
// leaves the backlog's fingerprint in backlog.stamp, so that the fallback guard takes none of
// git-norma's own writes for an agent's.
package stamp

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

// Tracker is the tracker as git-norma uses it: every change (with bd, which may touch .beads/
// even to read, every call) runs under .norma/locks/backlog.lock and leaves the backlog's
// fingerprint in backlog.stamp, which the workspace guard compares against: a parallel run's
// claim, or `git norma task add`, is not taken for an agent writing the backlog. A change by
// anyone else found before a call (which would re-stamp it) rewrites backlog.outside, which
// the guard watches too.
type Tracker struct {
	Inner tracker.Tracker
	// Root is the repository's main checkout.
	Root string
	// StampReads: reads are stamped too (bd).
	StampReads bool
}

var _ tracker.Tracker = Tracker{}

func (s Tracker) locked(ctx context.Context, stamp bool, call func() error) error {
	if !stamp {
		return call()
	}
	unlock, err := flock.Wait(ctx, LockPath(s.Root))
	if err != nil {
		return err
	}
	defer unlock()
	if stampedBefore(s.Root) && !AsLeft(s.Root) {
		markOutsideChange(s.Root) // before this call rewrites (and so hides) it
	}
	err = call()
	Write(s.Root)
	return err
}

func (s Tracker) Create(ctx context.Context, t tracker.NewTask) (out tracker.Task, err error) {
	err = s.locked(ctx, true, func() (e error) { out, e = s.Inner.Create(ctx, t); return e })
	return out, err
}

func (s Tracker) Get(ctx context.Context, id string) (out tracker.Task, err error) {
	err = s.locked(ctx, s.StampReads, func() (e error) { out, e = s.Inner.Get(ctx, id); return e })
	return out, err
}

func (s Tracker) List(ctx context.Context) (out []tracker.Task, err error) {
	err = s.locked(ctx, s.StampReads, func() (e error) { out, e = s.Inner.List(ctx); return e })
	return out, err
}

func (s Tracker) Ready(ctx context.Context) (out []tracker.Task, err error) {
	err = s.locked(ctx, s.StampReads, func() (e error) { out, e = s.Inner.Ready(ctx); return e })
	return out, err
}

// Heads returns the tasks' heads where the tracker keeps them (the embedded backlog); ok is
// false for one that does not (bd).
func (s Tracker) Heads(ctx context.Context) (heads []tracker.Head, ok bool, err error) {
	hs, ok := s.Inner.(tracker.HeadKeeper)
	if !ok {
		return nil, false, nil
	}
	err = s.locked(ctx, s.StampReads, func() (e error) { heads, e = hs.Heads(ctx); return e })
	return heads, true, err
}

// GetMany reads the tasks with ids, in that order: at once where the tracker can (the
// embedded backlog), one by one otherwise.
func (s Tracker) GetMany(ctx context.Context, ids []string) (out []tracker.Task, err error) {
	gm, ok := s.Inner.(tracker.HeadKeeper)
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
	err = s.locked(ctx, s.StampReads, func() (e error) { out, e = gm.GetMany(ctx, ids); return e })
	return out, err
}

// Scan passes a scan on to a tracker that offers one (the embedded backlog), and lists every
// task otherwise (bd).
func (s Tracker) Scan(ctx context.Context, fn func(tracker.Task) bool) error {
	sc, ok := s.Inner.(tracker.Scanner)
	if !ok {
		tasks, err := s.List(ctx)
		for _, t := range tasks {
			if !fn(t) {
				break
			}
		}
		return err
	}
	return s.locked(ctx, s.StampReads, func() error { return sc.Scan(ctx, fn) })
}

// Children lists a task's direct children (tracker.Children).
func (s Tracker) Children(ctx context.Context, id string) (out []tracker.Task, err error) {
	err = s.locked(ctx, s.StampReads, func() (e error) { out, e = tracker.Children(ctx, s.Inner, id); return e })
	return out, err
}

// KeepsStateApart says whether the tracker keeps git-norma's state apart from the notes.
func (s Tracker) KeepsStateApart() bool {
	return func() bool { k, ok := s.Inner.(tracker.StateKeeper); return ok && k.KeepsStateApart() }()
}

// ClaimWithState passes a claim carrying git-norma's state on to a tracker that keeps it
// apart, and makes a plain claim otherwise.
func (s Tracker) ClaimWithState(ctx context.Context, id, actor string, state json.RawMessage) (out tracker.Task, err error) {
	k, ok := s.Inner.(tracker.StateKeeper)
	if !ok || state == nil {
		return s.Claim(ctx, id, actor)
	}
	err = s.locked(ctx, true, func() (e error) { out, e = k.ClaimWithState(ctx, id, actor, state); return e })
	return out, err
}

// errNoLeases: the backlog has no leases of its own to renew or reclaim.
var errNoLeases = errors.New("the backlog keeps no leases of its own")

// Heartbeat passes a lease's renewal on to a tracker that keeps leases (tracker.Leaser).
func (s Tracker) Heartbeat(ctx context.Context, id string) error {
	l, ok := s.Inner.(tracker.Leaser)
	if !ok {
		return errNoLeases
	}
	return s.locked(ctx, true, func() error { return l.Heartbeat(ctx, id) })
}

// Reclaim passes a reclaim on to a tracker that keeps leases (tracker.Leaser).
func (s Tracker) Reclaim(ctx context.Context, id string, grace time.Duration) (ok bool, err error) {
	l, isLeaser := s.Inner.(tracker.Leaser)
	if !isLeaser {
		return false, errNoLeases
	}
	err = s.locked(ctx, true, func() (e error) { ok, e = l.Reclaim(ctx, id, grace); return e })
	return ok, err
}

// CloseForced passes a forced close on to a tracker that takes one.
func (s Tracker) CloseForced(ctx context.Context, id, reason string) error {
	fc, ok := s.Inner.(tracker.ForceCloser)
	if !ok {
		return s.SetStatus(ctx, id, tracker.StatusClosed, reason)
	}
	return s.locked(ctx, true, func() error { return fc.CloseForced(ctx, id, reason) })
}

func (s Tracker) SetStatus(ctx context.Context, id, status, reason string) error {
	return s.locked(ctx, true, func() error { return s.Inner.SetStatus(ctx, id, status, reason) })
}

func (s Tracker) Claim(ctx context.Context, id, actor string) (out tracker.Task, err error) {
	err = s.locked(ctx, true, func() (e error) { out, e = s.Inner.Claim(ctx, id, actor); return e })
	return out, err
}

func (s Tracker) Update(ctx context.Context, id string, u tracker.Update) error {
	return s.locked(ctx, true, func() error { return s.Inner.Update(ctx, id, u) })
}

func (s Tracker) RemoveDependency(ctx context.Context, issue, dependsOn string) error {
	return s.locked(ctx, true, func() error { return s.Inner.RemoveDependency(ctx, issue, dependsOn) })
}

func (s Tracker) AddDependency(ctx context.Context, issue, dependsOn, depType string) error {
	return s.locked(ctx, true, func() error { return s.Inner.AddDependency(ctx, issue, dependsOn, depType) })
}

// Fingerprint is a line (name, size, mode, time) for issues.jsonl and each entry of
// .beads/ but bd's bookkeeping: a few stat calls, never a walk.
func Fingerprint(root string) []string {
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

// LockPath is the lock every change of the backlog by git-norma runs under.
func LockPath(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.lock")
}

// OutsidePath is rewritten whenever git-norma finds the backlog changed by someone
// else; the workspace guard watches it.
func OutsidePath(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.outside")
}

func stampedBefore(root string) bool {
	_, err := os.Stat(Path(root))
	return err == nil
}

// markOutsideChange rewrites backlog.outside whole, through a temporary file and a rename.
// Best effort.
func markOutsideChange(root string) {
	path := OutsidePath(root)
	if os.WriteFile(path+".tmp", []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o600) == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

// Path is the stamp: the backlog as git-norma's last call left it.
func Path(root string) string {
	return filepath.Join(root, ".norma", "locks", "backlog.stamp")
}

// Write records the backlog as git-norma left it. Best effort: without a stamp the
// guard is only stricter. It is rewritten in place: it is only read under backlog.lock, which
// its writer holds, and one torn by a crash reads as "changed since", the strict side.
func Write(root string) {
	now := strings.Join(Fingerprint(root), "\n")
	if old, err := os.ReadFile(Path(root)); err != nil || string(old) != now {
		_ = os.WriteFile(Path(root), []byte(now), 0o600)
	}
}

// AsLeft reports whether the backlog is exactly as git-norma's last call left it.
func AsLeft(root string) bool {
	stamp, err := os.ReadFile(Path(root))
	return err == nil && string(stamp) == strings.Join(Fingerprint(root), "\n")
}
