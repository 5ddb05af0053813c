package git

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
)

// The oldest git git-norma supports: 2.38 added `git merge-tree --write-tree`, which landing
// uses to merge without touching any checkout.
const minMajor, minMinor = 2, 38

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`git version (\d+)\.(\d+)`) })

// CheckVersion fails when git is older than the supported minimum.
func (r Runner) CheckVersion(ctx context.Context) error {
	out, err := r.Version(ctx)
	if err != nil {
		return err
	}
	m := versionRE().FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("cannot read the git version from %q", out)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < minMajor || major == minMajor && minor < minMinor {
		return fmt.Errorf("git %d.%d is too old: git-norma needs git %d.%d or newer (for `git merge-tree --write-tree`); upgrade git and try again",
			major, minor, minMajor, minMinor)
	}
	return nil
}
