package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/loop"
)

// flagSpec is one option of an agent CLI, as its captured --help text lists it.
type flagSpec struct {
	// name is the canonical spelling: the last of "-p|--print".
	name string
	// arity: 0 a switch, '=' one value, '?' an optional value, '*' one or more values.
	arity byte
	// hidden flags work but are missing from --help (documented in agents/CONTRACT.md).
	hidden bool
}

// flagTable maps every spelling to its option.
type flagTable map[string]*flagSpec

// parseFlagTable reads one option per line: spellings joined by "|", then "=" (value),
// "?" (optional value) or "*" (values); a leading "!" marks a hidden option.
func parseFlagTable(spec string) flagTable {
	t := flagTable{}
	for _, line := range strings.Fields(spec) {
		f := &flagSpec{}
		if strings.HasPrefix(line, "!") {
			f.hidden, line = true, line[1:]
		}
		if c := line[len(line)-1]; c == '=' || c == '?' || c == '*' {
			f.arity, line = c, line[:len(line)-1]
		}
		names := strings.Split(line, "|")
		f.name = names[len(names)-1]
		for _, n := range names {
			t[n] = f
		}
	}
	return t
}

// cliArg is one option of ExtraArgs with its values.
type cliArg struct {
	flag   *flagSpec
	raw    []string
	values []string
}

// parseExtraArgs splits args into options the table knows. Anything else is refused: a
// positional would become (part of) the prompt, and an unknown option cannot be vetted.
func parseExtraArgs(cli string, table flagTable, args []string) ([]cliArg, error) {
	var out []cliArg
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			return nil, fmt.Errorf("%s: extra argument %q is not an option: git-norma passes the prompt itself, so extra_args may only hold options", cli, a)
		}
		name, val, inline := splitOption(table, a)
		f := table[name]
		if f == nil {
			return nil, fmt.Errorf("%s: unknown option %q: it is not in the `%s --help` git-norma was built against, so git-norma cannot tell what it permits; remove it from extra_args", cli, name, cli)
		}
		arg := cliArg{flag: f, raw: []string{a}}
		if inline {
			if f.arity == 0 {
				return nil, fmt.Errorf("%s: option %s takes no value (got %q)", cli, name, a)
			}
			arg.values = []string{val}
		}
		switch {
		case f.arity == '=' && !inline:
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s: option %s needs a value", cli, name)
			}
			i++
			arg.values, arg.raw = []string{args[i]}, append(arg.raw, args[i])
		case f.arity == '?' && !inline, f.arity == '*':
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				arg.values, arg.raw = append(arg.values, args[i]), append(arg.raw, args[i])
				if f.arity == '?' {
					break
				}
			}
			if f.arity == '*' && len(arg.values) == 0 {
				return nil, fmt.Errorf("%s: option %s needs at least one value", cli, name)
			}
		}
		out = append(out, arg)
	}
	return out, nil
}

// splitOption separates "--name=value" and a short option's attached value ("-Cdir").
func splitOption(table flagTable, a string) (name, val string, inline bool) {
	if strings.HasPrefix(a, "--") {
		return strings.Cut(a, "=")
	}
	if len(a) > 2 {
		if f := table[a[:2]]; f != nil && f.arity != 0 {
			return a[:2], strings.TrimPrefix(a[2:], "="), true
		}
	}
	return a, "", false
}

// argClass is what an extra option would grant a role.
type argClass int

const (
	argOK argClass = iota
	// argReserved: git-norma sets it itself, or it breaks the one-shot protocol.
	argReserved
	// argWrite: lets a read-only role (plan, check) write.
	argWrite
	// argUnsandboxed: drops the CLI's own permission checks.
	argUnsandboxed
)

// argRule is a backend's judgement of one extra option for one role. slot names the
// default of git-norma's own that the option replaces ("" for none); dirs are directories
// the option lets the CLI work in, which must stay inside the workspace.
type argRule struct {
	class argClass
	why   string
	slot  string
	dirs  []string
}

// reserved, writes and unsandboxed are the rules of each class.
func reserved(why string) argRule    { return argRule{class: argReserved, why: why} }
func writes(why string) argRule      { return argRule{class: argWrite, why: why} }
func unsandboxed(why string) argRule { return argRule{class: argUnsandboxed, why: why} }

// Rules several CLIs share.
var (
	freshSession = reserved("every step is a fresh session")
	headless     = reserved("the run is headless")
	ownWorktree  = reserved("the run's workspace is the worktree")
	// commonRules hold for every CLI, after its own rules.
	commonRules = map[string]argRule{
		"--help": reserved("it prints help and exits"), "--version": reserved("it prints the version and exits"),
		"--model": reserved("set the agent's model option instead"),
	}
)

// vetRule turns a rule into the refusal NewCLIAgent returns, or nil.
func vetRule(cli string, role loop.Role, a cliArg, r argRule, allow bool) error {
	opt := strings.Join(a.raw, " ")
	for _, d := range r.dirs {
		if err := checkDirValue(cli, a.flag.name, d); err != nil {
			return err
		}
	}
	switch r.class {
	case argReserved:
		return fmt.Errorf("%s: %s cannot be used in extra_args: %s", cli, opt, r.why)
	case argWrite:
		if !role.Writes() && !allow {
			return fmt.Errorf("%s: %s lets the %s agent write (%s), but plan and check are read-only: they may change no file and git-norma fails the step if the workspace changed; remove it, or set allow_unsandboxed for this agent if it really must run commands that write", cli, opt, role, r.why)
		}
	case argUnsandboxed:
		if !allow {
			return fmt.Errorf("%s: %s drops %s's own permission checks (%s); git-norma refuses it unless allow_unsandboxed is set for the %s agent, which is only safe when the host itself is a sandbox", cli, opt, cli, r.why, role)
		}
	}
	return nil
}

// checkDirValue accepts only a relative path that stays inside the workspace: the role's
// workspace is chosen per run, so an absolute path always points elsewhere.
func checkDirValue(cli, flag, dir string) error {
	clean := filepath.Clean(dir)
	if dir == "" || filepath.IsAbs(dir) || strings.HasPrefix(dir, "~") || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%s: %s %q points outside the workspace: an agent may only work in the run's workspace (git-norma already runs %s there); use a relative path inside it or drop the option", cli, flag, dir, cli)
	}
	return nil
}

// dirsInside checks, at run time, that the relative directories of the options still
// resolve inside the workspace (a symlink in the workspace could point out of it).
func dirsInside(cli, workDir string, dirs []string) error {
	root, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(filepath.Join(workDir, d))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			// The workspace made it so (an agent can link a directory out): its violation, not a
			// CLI that cannot start here (which stops a loop).
			return cliErrorf(loop.ErrKindWorkspace, cli, "refusing to start: directory option %q resolves to %s, outside the workspace", d, real)
		}
	}
	return nil
}

// splitList splits a comma or space separated list, keeping "Bash(git status *)" whole.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		depth, start := 0, 0
		for i, c := range v + "," {
			switch {
			case c == '(':
				depth++
			case c == ')':
				depth--
			case (c == ',' || c == ' ') && depth <= 0:
				if s := strings.TrimSpace(v[start:min(i, len(v))]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
	}
	return out
}
