package hooks

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ZeroID is git's all-zeros object id: a ref being created (as old value) or deleted (new).
func ZeroID(id string) bool { return strings.Trim(id, "0") == "" }

// PushUpdate is one line of the pre-push hook's stdin: a local ref and the remote ref it
// updates, with both object ids.
type PushUpdate struct {
	LocalRef, LocalID, RemoteRef, RemoteID string
}

// Deletes reports a push that deletes the remote ref (nothing to verify).
func (u PushUpdate) Deletes() bool { return ZeroID(u.LocalID) }

// ParsePrePush reads the pre-push hook's stdin (githooks(5)).
func ParsePrePush(r io.Reader) ([]PushUpdate, error) {
	var out []PushUpdate
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("pre-push: unexpected line %q", sc.Text())
		}
		out = append(out, PushUpdate{LocalRef: f[0], LocalID: f[1], RemoteRef: f[2], RemoteID: f[3]})
	}
	return out, sc.Err()
}
