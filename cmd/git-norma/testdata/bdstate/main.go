// Command bdstate is a fake bd that keeps state, for tests with several workers sharing one
// backlog (the scale-out test): real bd cannot be installed here. It speaks bd 1.0.5's recorded
// formats (gitnorma/tracker/testdata/bd/samples, beads/CONTRACT.md) for exactly the calls
// git-norma makes — show, list, ready, update (claim, metadata, notes, labels, status,
// assignee), close — and keeps the issues in the JSON file $BDSTATE_FILE, under an flock, so
// that concurrent workers see one backlog and a claim is a compare-and-swap, as bd's is. Every
// call is appended to $BDSTATE_LOG, when set, one line of tab-separated arguments.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// issue is the part of bd's Issue record these tests use, in bd's field order.
type issue struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Description string          `json:"description,omitempty"`
	Notes       string          `json:"notes,omitempty"`
	Status      string          `json:"status"`
	Priority    int             `json:"priority"`
	IssueType   string          `json:"issue_type"`
	Assignee    string          `json:"assignee,omitempty"`
	CreatedAt   string          `json:"created_at"`
	UpdatedAt   string          `json:"updated_at"`
	StartedAt   string          `json:"started_at,omitempty"`
	ClosedAt    string          `json:"closed_at,omitempty"`
	CloseReason string          `json:"close_reason,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Labels      []string        `json:"labels,omitempty"`
}

// state is the backlog, with how often each issue was claimed and closed (for the test to
// assert "closed exactly once").
type state struct {
	Issues []*issue       `json:"issues"`
	Closes map[string]int `json:"closes"`
	Claims map[string]int `json:"claims"`
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if log := os.Getenv("BDSTATE_LOG"); log != "" {
		if f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(args, "\t"))
			f.Close()
		}
	}
	path := os.Getenv("BDSTATE_FILE")
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fail(err)
	}
	var st state
	data, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return fail(err)
	}
	if st.Closes == nil {
		st.Closes, st.Claims = map[string]int{}, map[string]int{}
	}
	out, code, changed := dispatch(&st, args)
	if changed {
		data, _ := json.MarshalIndent(&st, "", "  ")
		if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
			return fail(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return fail(err)
		}
	}
	if out != nil {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(out)
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "bdstate:", err)
	return 98
}

func (st *state) find(id string) *issue {
	for _, is := range st.Issues {
		if is.ID == id {
			return is
		}
	}
	return nil
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }

// dispatch runs one bd command: its stdout (JSON), exit code, and whether the state changed.
func dispatch(st *state, args []string) (any, int, bool) {
	if len(args) == 0 || args[len(args)-1] != "--json" {
		fmt.Fprintf(os.Stderr, "bdstate: not a call git-norma makes: %v\n", args)
		return nil, 97, false
	}
	args = args[:len(args)-1]
	switch {
	case len(args) == 2 && args[0] == "show":
		is := st.find(args[1])
		if is == nil {
			fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found matching %q\n", args[1], args[1])
			return nil, 1, false
		}
		// bd 1.0.5's show counts the tasks that depend on the issue; here none do.
		type shown struct {
			*issue
			DependentCount int `json:"dependent_count"`
		}
		return []shown{{issue: is}}, 0, false
	case slices.Equal(args, []string{"list", "--all", "--limit", "0"}):
		return st.Issues, 0, false
	case slices.Equal(args, []string{"ready", "--limit", "0"}):
		ready := []*issue{}
		for _, is := range st.Issues {
			if is.Status == "open" {
				ready = append(ready, is)
			}
		}
		return ready, 0, false
	case len(args) >= 2 && args[0] == "update":
		return update(st, args[1], args[2:])
	case len(args) >= 4 && args[0] == "close" && args[2] == "--reason":
		is := st.find(args[1])
		if is == nil {
			fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found\n", args[1])
			return nil, 1, false
		}
		is.Status, is.CloseReason, is.ClosedAt, is.UpdatedAt = "closed", args[3], now(), now()
		st.Closes[is.ID]++
		return []*issue{is}, 0, true
	}
	fmt.Fprintf(os.Stderr, "bdstate: not a call git-norma makes: %v\n", args)
	return nil, 97, false
}

func update(st *state, id string, flags []string) (any, int, bool) {
	is := st.find(id)
	if is == nil {
		fmt.Fprintf(os.Stderr, "Error resolving %s: no issue found\n", id)
		return nil, 1, false
	}
	actor := os.Getenv("BEADS_ACTOR")
	for i := 0; i < len(flags); i++ {
		flag, val := flags[i], ""
		if flag != "--claim" {
			if i+1 >= len(flags) {
				fmt.Fprintf(os.Stderr, "bdstate: %s needs a value\n", flag)
				return nil, 97, false
			}
			i++
			val = flags[i]
		}
		switch flag {
		case "--claim":
			// bd's claim: a compare-and-swap; the same actor may claim again.
			if is.Status != "open" && !(is.Status == "in_progress" && is.Assignee == actor) {
				fmt.Fprintf(os.Stderr, "Error claiming %s: issue already claimed by %s\n", id, is.Assignee)
				return nil, 1, false
			}
			is.Status, is.Assignee, is.StartedAt = "in_progress", actor, now()
			st.Claims[id]++
		case "--actor":
			actor = val
		case "--metadata":
			// bd 1.0.5 merges the object into the metadata, key by key.
			merged := map[string]json.RawMessage{}
			_ = json.Unmarshal(is.Metadata, &merged)
			var in map[string]json.RawMessage
			if err := json.Unmarshal([]byte(val), &in); err != nil {
				fmt.Fprintln(os.Stderr, "invalid JSON in --metadata: must be valid JSON")
				return nil, 1, false
			}
			for k, v := range in {
				merged[k] = v
			}
			is.Metadata, _ = json.Marshal(merged)
		case "--notes":
			is.Notes = val
		case "--add-label":
			if !slices.Contains(is.Labels, val) {
				is.Labels = append(is.Labels, val)
				slices.Sort(is.Labels)
			}
		case "--remove-label":
			is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == val })
		case "--status":
			is.Status = val
		case "--assignee":
			is.Assignee = val
		default:
			fmt.Fprintf(os.Stderr, "bdstate: unknown flag %s\n", flag)
			return nil, 97, false
		}
	}
	is.UpdatedAt = now()
	return []*issue{is}, 0, true
}
