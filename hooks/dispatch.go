package hooks

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/git"
)

// WaitEnv makes the post-commit hook check in the foreground (set for its own background job,
// and by tests that need the result before going on).
const WaitEnv = "GIT_NORMA_HOOK_WAIT"

// Invocation is one run of a hook as git makes it: the hook's name and arguments, its
// environment and its standard input, in the work tree git runs it from.
type Invocation struct {
	Name  string // post-commit, pre-commit, pre-merge-commit or pre-push
	Args  []string
	Env   []string
	Stdin io.Reader
	// Git runs git in the work tree the hook runs in.
	Git git.Runner
}

// Handler is what git-norma does on each event; the application implements it.
type Handler interface {
	// Committed: a commit was made. With wait, its check runs before the hook returns.
	Committed(ctx context.Context, wait bool) error
	// Merging: a merge is about to be committed, bringing in the commits merged; concluding
	// is the git command committing it: merge, or commit (a squash, a resolved conflict).
	Merging(ctx context.Context, merged []string, concluding string) error
	// Pushing: a push to remote is about to update the remote refs as updates say.
	Pushing(ctx context.Context, remote string, updates []PushUpdate) error
}

// Dispatch turns a hook invocation into its event and hands it to h.
func Dispatch(ctx context.Context, inv Invocation, h Handler) error {
	switch inv.Name {
	case "post-commit":
		return h.Committed(ctx, lookup(inv.Env, WaitEnv) != "")
	case "pre-merge-commit", "pre-commit":
		merged := mergedCommits(ctx, inv)
		if len(merged) == 0 {
			return nil // pre-commit of a plain commit
		}
		concluding := "commit"
		if inv.Name == "pre-merge-commit" {
			concluding = "merge"
		}
		return h.Merging(ctx, merged, concluding)
	default:
		updates, err := ParsePrePush(inv.Stdin)
		if err != nil {
			return err
		}
		remote := ""
		if len(inv.Args) > 0 {
			remote = inv.Args[0]
		}
		// A push to a URL names its remote by that URL: the remote configured with it is
		// the one pushed to, and what it has was judged there.
		if len(inv.Args) > 1 {
			if name := remoteWithURL(ctx, inv.Git, inv.Args[0], inv.Args[1]); name != "" {
				remote = name
			}
		}
		return h.Pushing(ctx, remote, updates)
	}
}

// remoteWithURL is the configured remote a push names given and sends to url ("" when given
// names a remote, or no remote has that URL). git names a remote given by its URL
// (git push <url>) by that URL as typed, and url is where it pushes, after url.<base>.insteadOf
// or pushInsteadOf: a remote has it when its url or pushurl is either as the configuration
// spells it, or is url once git rewrites it.
func remoteWithURL(ctx context.Context, g git.Runner, given, url string) string {
	out, err := g.ConfigMatching(ctx, `^remote\..+\.(push)?url$`)
	if err != nil {
		return ""
	}
	var names, spelled []string // spelled[i]: a URL remote names[i] is configured with
	for _, line := range strings.Split(out, "\n") {
		key, value, _ := strings.Cut(line, " ")
		name, ok := strings.CutPrefix(key, "remote.")
		if i := strings.LastIndexByte(name, '.'); ok && i > 0 {
			names, spelled = append(names, name[:i]), append(spelled, value)
		}
	}
	if slices.Contains(names, given) {
		return ""
	}
	for i, name := range names {
		if spelled[i] == given || spelled[i] == url {
			return name
		}
	}
	for _, name := range slices.Compact(slices.Clone(names)) {
		if urls, err := git.RemoteURLs(ctx, g, name); err == nil && slices.Contains(urls, url) {
			return name
		}
	}
	return ""
}

// mergedCommits lists the commits a merge in progress brings in: pre-merge-commit gets them
// as GITHEAD_<sha> variables; the commit that concludes a merge after conflicts (pre-commit)
// finds them in MERGE_HEAD, and the commit that concludes a squash (git merge --squash, git
// pull --squash: no merge is recorded, no merge hook runs) in SQUASH_MSG, whose "commit <id>"
// lines name every commit squashed.
func mergedCommits(ctx context.Context, inv Invocation) []string {
	var shas []string
	for _, kv := range inv.Env {
		if name, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, "GITHEAD_") {
			shas = append(shas, strings.TrimPrefix(name, "GITHEAD_"))
		}
	}
	if path, err := inv.Git.GitPath(ctx, "MERGE_HEAD"); err == nil {
		if data, err := os.ReadFile(path); err == nil {
			shas = append(shas, strings.Fields(string(data))...)
		}
	}
	if path, err := inv.Git.GitPath(ctx, "SQUASH_MSG"); err == nil {
		if data, err := os.ReadFile(path); err == nil {
			shas = append(shas, squashedCommits(string(data))...)
		}
	}
	return shas
}

// squashedCommits are the commits a SQUASH_MSG lists: git writes each as a "commit <id>" line,
// unindented (their messages are indented).
func squashedCommits(msg string) []string {
	var shas []string
	for _, line := range strings.Split(msg, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "commit" && strings.HasPrefix(line, "commit ") && isObjectID(f[1]) {
			shas = append(shas, f[1])
		}
	}
	return shas
}

// isObjectID says whether s is a full object id (SHA-1 or SHA-256), in lower-case hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// lookup is the value of name in env ("" when unset).
func lookup(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
