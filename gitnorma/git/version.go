package git

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// MinMajor and MinMinor are the oldest git git-norma supports: 2.38 added
// `git merge-tree --write-tree`, which landing uses to merge without touching any checkout.
const (
	MinMajor = 2
	MinMinor = 38
)

// ErrTooOld is returned by CheckVersion when the installed git predates MinMajor.MinMinor.
type ErrTooOld struct{ Found string }

func (e *ErrTooOld) Error() string {
	return fmt.Sprintf("git %s is too old: git-norma needs git %d.%d or newer (for `git merge-tree --write-tree`); upgrade git and try again",
		e.Found, MinMajor, MinMinor)
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`git version (\d+)\.(\d+)(\.\d+)?`) })

// ParseVersion extracts major and minor from `git version` output.
func ParseVersion(out string) (major, minor int, ok bool) {
	m := versionRE().FindStringSubmatch(out)
	if m == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, true
}

// CheckVersion fails with *ErrTooOld when git is older than the supported minimum.
func (r Runner) CheckVersion(ctx context.Context) error {
	out, err := r.Output(ctx, "version")
	if err != nil {
		return err
	}
	major, minor, ok := ParseVersion(out)
	if !ok {
		return fmt.Errorf("cannot read the git version from %q", out)
	}
	if major < MinMajor || (major == MinMajor && minor < MinMinor) {
		return &ErrTooOld{Found: fmt.Sprintf("%d.%d", major, minor)}
	}
	return nil
}
