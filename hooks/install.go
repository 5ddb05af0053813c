package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Names are the hooks git-norma installs.
var Names = []string{"pre-commit", "post-commit", "pre-merge-commit", "pre-push"}

// Paths are the files of Names in dir.
func Paths(dir string) []string {
	paths := make([]string, len(Names))
	for i, name := range Names {
		paths[i] = filepath.Join(dir, name)
	}
	return paths
}

// gating hooks stop git from doing something unsafe (merging or pushing unverified work) when
// git-norma refuses; the others only report.
var gating = map[string]bool{"pre-commit": true, "pre-merge-commit": true, "pre-push": true}

// missing is what each hook's block does when git-norma is not on PATH (a GUI client, cron,
// a PATH without it, the tool removed): it never stops git, and says once, on stderr, what
// went unchecked — and only where the hook had something to check: pre-commit when it
// concludes a merge, post-commit on a task branch. (Each line succeeds whatever it finds: the
// block may be all there is in the hook.)
var missing = map[string]string{
	"pre-commit": "    if [ -f \"$(git rev-parse --git-path MERGE_HEAD)\" ]; then " +
		warnMissing("this merge was not checked for unverified task work") + "; fi\n",
	"post-commit": "    case \"$(git symbolic-ref -q HEAD)\" in refs/heads/norma/task/*) " +
		warnMissing("this commit on a task branch was not checked") + ";; esac\n",
	"pre-merge-commit": "    " + warnMissing("this merge was not checked for unverified task work") + "\n",
	"pre-push":         "    " + warnMissing("this push was not checked for unverified task work") + "\n",
}

func warnMissing(what string) string {
	return "echo \"git-norma is not on PATH: " + what + " (put it on PATH, or remove its hooks: git norma hooks uninstall)\" >&2"
}

// stdinHooks receive data on stdin that a chained hook must still be able to read.
var stdinHooks = map[string]bool{"pre-push": true}

const (
	beginMarker = "# >>> git-norma >>>"
	endMarker   = "# <<< git-norma <<<"
	// version is bumped when the block changes; an older block is replaced in place.
	version = "v3"
	// chainedSuffix is where --force moves a hook it cannot chain in place.
	chainedSuffix = ".norma-chained"
)

// Block is the marked block git-norma puts into hook name.
func Block(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (managed by `git norma hooks install`; remove with `git norma hooks uninstall`)\n", beginMarker, version)
	// ${VAR:-}: a hook whose shebang sets -u must not fail on the guard being unset.
	b.WriteString("if [ -z \"${" + GuardVar + ":-}\" ]; then\n")
	if stdinHooks[name] {
		// Keep stdin for whatever runs after this block: save it, give git-norma a copy, and
		// point the script's stdin at the saved copy (unlinked: the open fd keeps it readable).
		// Saved in the git directory when the temporary one cannot be written.
		b.WriteString("  norma_in=$(mktemp 2>/dev/null || mktemp \"$(git rev-parse --git-path norma-pre-push.XXXXXX)\") && cat > \"$norma_in\"\n")
	}
	b.WriteString("  if command -v git-norma >/dev/null 2>&1; then\n")
	if stdinHooks[name] {
		fmt.Fprintf(&b, "    git-norma hook %s \"$@\" < \"$norma_in\" || { rm -f \"$norma_in\"; exit 1; }\n", name)
	} else if gating[name] {
		fmt.Fprintf(&b, "    git-norma hook %s \"$@\" || exit 1\n", name)
	} else {
		fmt.Fprintf(&b, "    git-norma hook %s \"$@\"\n", name)
	}
	b.WriteString("  else\n")
	b.WriteString(missing[name])
	b.WriteString("  fi\n")
	if stdinHooks[name] {
		b.WriteString("  exec 0< \"$norma_in\"; rm -f \"$norma_in\"\n")
	}
	b.WriteString("fi\n")
	b.WriteString(endMarker + "\n")
	return b.String()
}

// shellShebang matches the interpreters a POSIX block can be chained into.
var shellShebang = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^#!\s*(/usr/bin/env\s+)?(/bin/|/usr/bin/|/usr/local/bin/)?(sh|bash|dash|zsh|ksh|ash)(\s|$)`)
})

// blockRE finds our block, any version.
var blockRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)` + regexp.QuoteMeta(beginMarker) + `[^\n]*\n.*?` + regexp.QuoteMeta(endMarker) + `\n?`)
})

// Action is what Install or Uninstall did to one hook file.
type Action struct {
	Hook   string `json:"hook"`
	Path   string `json:"path"`
	Result string `json:"result"` // created | chained | upgraded | unchanged | skipped | removed | removed block | restored
	Detail string `json:"detail,omitempty"`
}

// Install writes git-norma's block into each hook in dir (git rev-parse --git-path hooks): a new
// file when there is none, the block right after the shebang of an existing shell hook (so
// both run: git-norma first, then the existing commands), an in-place upgrade of an older
// block, or nothing when it is current. A symbolic link, or a hook that is not executable, is
// moved aside to <hook>.norma-chained, and our shim runs it after its block when git would; a
// hook that is not a shell script is skipped, unless force moves it aside the same way.
func Install(dir string, force bool) ([]Action, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return eachHook(dir, func(path, name string) (Action, error) { return installOne(path, name, force) })
}

// eachHook does do to each hook of dir in turn, up to the first error.
func eachHook(dir string, do func(path, name string) (Action, error)) ([]Action, error) {
	var actions []Action
	for _, name := range Names {
		a, err := do(filepath.Join(dir, name), name)
		if err != nil {
			return actions, err
		}
		actions = append(actions, a)
	}
	return actions, nil
}

func installOne(path, name string, force bool) (Action, error) {
	a := Action{Hook: name, Path: path}
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		a.Result = "created"
		return a, writeKeepingMode(path, []byte("#!/bin/sh\n"+Block(name)), 0o755)
	}
	if err != nil {
		return a, err
	}
	data, err := os.ReadFile(path)
	if err != nil && st.Mode()&os.ModeSymlink == 0 {
		return a, err
	}
	block := Block(name)
	if !blockRE().Match(data) {
		// A symbolic link (to a script the project tracks, say) would be replaced by a copy
		// of what it points at, and a hook that is not executable would keep our block from
		// running (git ignores it): either is moved aside whole, and runs after our block as
		// git would run it.
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			return chainAside(path, name, "a symbolic link")
		case st.Mode().Perm()&0o111 == 0:
			return chainAside(path, name, "not executable, so git does not run it")
		}
	}
	if loc := blockRE().FindIndex(data); loc != nil {
		if st.Mode()&os.ModeSymlink == 0 && st.Mode().Perm()&0o111 == 0 {
			// Our block is there, but git runs no part of a hook that is not executable: the
			// rest is moved aside, as disabled as it was, and our block runs from a shim.
			rest := splice(data, loc[0], loc[1], "")
			if t := string(bytes.TrimSpace(rest)); t == "" || t == "#!/bin/sh" {
				a.Result, a.Detail = "upgraded", "it was not executable, so git did not run it"
				return a, writeKeepingMode(path, []byte("#!/bin/sh\n"+block), 0o755)
			}
			if err := writeKeepingMode(path, rest, 0); err != nil {
				return a, err
			}
			return chainAside(path, name, "not executable, so git does not run it")
		}
		if string(data[loc[0]:loc[1]]) == block {
			a.Result = "unchanged"
			return a, nil
		}
		if st.Mode()&os.ModeSymlink != 0 {
			a.Result, a.Detail = "skipped", "a symbolic link to a hook with an older git-norma block: replace that block with the lines of `git norma hooks install --manual` in the file it points at"
			return a, nil
		}
		a.Result = "upgraded"
		return a, writeKeepingMode(path, splice(data, loc[0], loc[1], block), 0)
	}
	if !shellShebang().Match(firstLine(data)) {
		if !force {
			a.Result, a.Detail = "skipped", fmt.Sprintf("not a shell script git-norma can add its block to; add the lines of `git norma hooks install --manual` to it yourself, or use --force to move it to %s%s and chain it", name, chainedSuffix)
			return a, nil
		}
		return chainAside(path, name, "not a shell script")
	}
	a.Result = "chained"
	at := len(firstLine(data))
	if at < len(data) && data[at] == '\n' {
		at++
	}
	return a, writeKeepingMode(path, splice(data, at, at, block), 0)
}

// AsideTakenError is a hook chainAside would move to Aside, where a file is already (an earlier
// install's copy, say, after another tool replaced the hook): neither is touched.
type AsideTakenError struct{ Hook, Aside string }

func (e *AsideTakenError) Error() string {
	return e.Aside + " exists already: git-norma moves " + filepath.Base(e.Hook) + " there to chain it"
}

// chainAside moves a hook that cannot be edited in place (why says why) out of the way and
// installs a shim that runs it after git-norma's block, with the same arguments and stdin,
// when git would (it is executable).
func chainAside(path, name, why string) (Action, error) {
	aside := path + chainedSuffix
	if _, err := os.Lstat(aside); err == nil {
		return Action{Hook: name, Path: path}, &AsideTakenError{Hook: path, Aside: aside}
	}
	if err := os.Rename(path, aside); err != nil {
		return Action{}, err
	}
	shim := "#!/bin/sh\n" + Block(name) + chainCommands(name)
	return Action{Hook: name, Path: path, Result: "chained", Detail: "moved the existing hook (" + why + ") to " + aside}, writeKeepingMode(path, []byte(shim), 0o755)
}

// chainCommands are the lines of chainAside's shim after git-norma's block: they run the hook
// moved aside when git would.
func chainCommands(name string) string {
	run := fmt.Sprintf("\"$(dirname \"$0\")/%s%s\"", name, chainedSuffix)
	return "[ -x " + run + " ] || exit 0\nexec " + run + " \"$@\"\n"
}

// Uninstall removes git-norma's block from each hook, leaving every other byte and the mode as
// they were; a file left with nothing but its shebang is removed, and a hook install moved
// aside is put back (when the shim was edited since, its lines stay, still running that hook).
func Uninstall(dir string) ([]Action, error) {
	return eachHook(dir, uninstallOne)
}

func uninstallOne(path, name string) (Action, error) {
	a := Action{Hook: name, Path: path, Result: "unchanged"}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return a, err
	}
	loc := blockRE().FindIndex(data)
	if loc == nil {
		return a, nil
	}
	rest := splice(data, loc[0], loc[1], "")
	aside := path + chainedSuffix
	_, err = os.Lstat(aside)
	chained := err == nil
	if chained && string(rest) == "#!/bin/sh\n"+chainCommands(name) {
		// The shim as chainAside wrote it: the hook it moved aside goes back. A shim someone
		// edited since keeps their lines, and still runs the hook moved aside (below).
		a.Result = "restored"
		return a, os.Rename(aside, path)
	}
	if len(bytes.TrimSpace(rest)) == 0 || string(bytes.TrimSpace(rest)) == "#!/bin/sh" {
		a.Result = "removed"
		if chained {
			// The user took the lines that ran it out of the shim: it is theirs to put back.
			a.Detail = fmt.Sprintf("the hook install moved aside is still in %s, and git does not run it; to put it back: mv %s %s", aside, aside, path)
		}
		return a, os.Remove(path)
	}
	a.Result = "removed block"
	if chained {
		// Left to the lines the user edited: removing them would silently stop it.
		a.Detail = fmt.Sprintf("kept your edits; the hook install moved aside is in %s and runs only from the lines left in %s; to put it back instead: mv %s %s", aside, name, aside, path)
	}
	return a, writeKeepingMode(path, rest, 0)
}

// Manual is what to add by hand to a hook git-norma will not edit.
func Manual() string {
	var b strings.Builder
	for _, name := range Names {
		fmt.Fprintf(&b, "# in %s, near the top:\n%s\n", name, Block(name))
	}
	return b.String()
}

// Status reports, per hook, whether our current block is there.
func Status(dir string) map[string]string {
	out := map[string]string{}
	for _, name := range Names {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		st, serr := os.Stat(path)
		switch {
		case err != nil || serr != nil:
			out[name] = "not installed"
		case st.Mode().Perm()&0o111 == 0 && blockRE().Match(data):
			out[name] = "not run (the hook is not executable)"
		case strings.Contains(string(data), Block(name)):
			out[name] = "installed"
		case blockRE().Match(data):
			out[name] = "outdated"
		default:
			out[name] = "not installed (another hook is there)"
		}
	}
	return out
}

func firstLine(data []byte) []byte {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i]
	}
	return data
}

func splice(data []byte, from, to int, insert string) []byte {
	out := make([]byte, 0, len(data)+len(insert))
	out = append(out, data[:from]...)
	out = append(out, insert...)
	return append(out, data[to:]...)
}

// writeKeepingMode replaces path's content atomically; mode 0 keeps the file's current mode.
func writeKeepingMode(path string, data []byte, mode os.FileMode) error {
	if mode == 0 {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		mode = st.Mode().Perm()
	}
	tmp := path + ".norma-tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
