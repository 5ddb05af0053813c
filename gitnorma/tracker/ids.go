package tracker

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// Top-level ids start at this many random characters and grow when a length looks crowded.
const (
	minIDLen     = 4
	maxIDLen     = 12
	triesPerSize = 5
)

var prefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })

// ValidPrefix reports whether p can start task ids. Ids become branch names and paths, so the
// prefix is kept to lowercase letters, digits and inner dashes (bd trims a trailing '-' too).
func ValidPrefix(p string) bool {
	return prefixRE().MatchString(p) && !strings.HasSuffix(p, "-")
}

// idSuffixRE is what follows "<prefix>-" in a task id.
var idSuffixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(\.[0-9]+)*$`) })

// ValidateID refuses anything that is not <prefix>-<base36>[.<n>...] before the id is used in a
// file name, branch or ref, where "../x" or spaces would do damage.
func ValidateID(prefix, id string) error {
	if id == "" {
		return errors.New("task id is empty")
	}
	rest, ok := strings.CutPrefix(id, prefix+"-")
	if !ok || !idSuffixRE().MatchString(rest) {
		return fmt.Errorf("invalid task id %q: task ids look like %s-a3f2 or %s-a3f2.1", id, prefix, prefix)
	}
	return nil
}

// bdIDRE is any id bd makes: its workspace's prefix, which bd derives from the directory name
// when none was given (letters, digits, '_' for '.', inner dashes), a dash and the hash.
var bdIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*-[a-z0-9]+(\.[0-9]+)*$`) })

// ValidateBDID is ValidateID for the bd backend, whose prefix is bd's own: any prefix bd could
// have made, still nothing a file name, branch or ref could be hurt by.
func ValidateBDID(id string) error {
	if id == "" {
		return errors.New("task id is empty")
	}
	if !bdIDRE().MatchString(id) {
		return fmt.Errorf("invalid task id %q: bd's task ids look like <prefix>-a3f or <prefix>-a3f.1", id)
	}
	return nil
}

// randomBase36 returns n lowercase base36 characters from random, without modulo bias.
func randomBase36(random io.Reader, n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n)
	for len(out) < n {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("generate task id: %w", err)
		}
		for _, b := range buf {
			if b < 252 && len(out) < n { // 252 = 7*36
				out = append(out, base36[b%36])
			}
		}
	}
	return string(out), nil
}

// newTopID picks a random unused top-level id. An id is also taken when orphaned children of
// it exist, so a new task never adopts them.
func newTopID(random io.Reader, prefix string, ids []string) (string, error) {
	for n := minIDLen; n <= maxIDLen; n++ {
		for range triesPerSize {
			s, err := randomBase36(random, n)
			if err != nil {
				return "", err
			}
			id := prefix + "-" + s
			if !idTaken(id, ids) {
				return id, nil
			}
		}
	}
	return "", errors.New("no free task id found: the backlog looks full of collisions")
}

func idTaken(id string, ids []string) bool {
	return slices.ContainsFunc(ids, func(e string) bool { return e == id || strings.HasPrefix(e, id+".") })
}

// nextChildID numbers children like bd: one past the highest direct child number in use,
// counting grandchildren too so an orphaned <parent>.3.1 keeps .3 reserved.
func nextChildID(parent string, ids []string) string {
	highest := 0
	for _, e := range ids {
		rest, ok := strings.CutPrefix(e, parent+".")
		if !ok {
			continue
		}
		seg, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(seg); err == nil && n > highest {
			highest = n
		}
	}
	return parent + "." + strconv.Itoa(highest+1)
}
