package gitnorma

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-norma/git-norma/gitnorma/config"
	"github.com/git-norma/git-norma/gitnorma/flock"
	"github.com/git-norma/git-norma/gitnorma/git"
	"github.com/git-norma/git-norma/gitnorma/store"
	"github.com/git-norma/git-norma/hooks"
	"github.com/git-norma/git-norma/loop"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// confinement is how this machine and config confine a run's agents.
type confinement struct {
	mode sandbox.Mode
	// abi is the kernel's Landlock ABI (0: none, why says why).
	abi int
	why string
	// launcher is the binary started as the sandbox launcher: git-norma itself.
	launcher string
	// namespace says the launcher runs in a pid namespace of its own (nsWhy says why not).
	namespace bool
	nsWhy     string
}

// landlock says whether agents get Landlock: the mode allows it and the kernel has it.
func (c confinement) landlock() bool { return c.mode != sandbox.ModeOff && c.abi > 0 }

// confiner is how git-norma confines what it starts: the sandbox config, and the repository
// whose shared places a confined process must not write.
type confiner struct {
	cfg  config.Sandbox
	repo *Repo
}

func (a *App) confiner() confiner { return confiner{cfg: a.Config.Sandbox, repo: a.Repo} }

// shields says the kernel keeps every process a step starts out of the places the fallback
// guard and the run dir's fingerprint watch: Landlock confines them, and sandbox.allow_write
// opens none of the repository's shared directories (the main checkout, its git directory).
func (cf confiner) shields(c confinement) bool {
	if !c.landlock() {
		return false
	}
	for _, p := range expandHome(cf.cfg.AllowWrite) {
		p, err := filepath.Abs(p)
		if err != nil {
			return false
		}
		// Compared where the links lead, as Landlock applies them: ~/work may be /data/work.
		for _, shared := range []string{cf.repo.Root, cf.repo.GitDir} {
			for _, a := range []string{p, resolved(p)} {
				for _, b := range []string{shared, resolved(shared)} {
					if contains(a, b) || contains(b, a) {
						return false
					}
				}
			}
		}
	}
	return true
}

// resolved is path with its symbolic links followed, or path itself when that fails.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// contains says path is dir or inside it.
func contains(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// confinement is landlock's answer and whether the launcher can run in namespaces of its own
// (asked of the kernel by starting it: a few milliseconds, so only where processes start).
func (cf confiner) confinement() (confinement, error) {
	c, err := cf.withoutProbe()
	if err != nil {
		return c, err
	}
	c.namespace, c.nsWhy, err = sandbox.Namespaces(c.launcher)
	if err != nil {
		return c, fatalf("find the processes of yours that hold namespaces or processes (lsns -t user; ps -u $USER) and end them, then run again",
			"%v; nothing was started: agents would run without a pid namespace of their own", err)
	}
	return c, nil
}

// withoutProbe is confinement without asking about namespaces: the mode in force
// (GIT_NORMA_SANDBOX over sandbox.mode) and the kernel's Landlock ABI. Mode required on a
// kernel without Landlock is refused before anything runs.
func (cf confiner) withoutProbe() (confinement, error) {
	mode, err := sandbox.EffectiveMode(sandbox.Mode(cf.cfg.Mode))
	if err != nil {
		return confinement{}, usagef("set "+sandbox.ModeEnv+" to auto, required or off (or unset it)", "%v", err)
	}
	c := confinement{mode: mode}
	c.abi, c.why = sandbox.ABI()
	if c.launcher, err = os.Executable(); err != nil {
		return c, fmt.Errorf("find git-norma's own binary, the sandbox launcher: %w", err)
	}
	if mode == sandbox.ModeRequired && c.abi == 0 {
		return c, fatalf(`run on a Linux kernel with Landlock (5.13+, "landlock" in /sys/kernel/security/lsm), or set "sandbox": {"mode": "auto"} in .norma/config.json to run agents unconfined`,
			"sandbox mode is required but agents cannot be confined: %s; nothing was started", c.why)
	}
	return c, nil
}

// loopSandbox is the sandbox the engine starts every agent and check command in.
func (r *run) loopSandbox(ctx context.Context) *loop.Sandbox {
	sb := r.app.confiner().sandbox(ctx, r.pre.sandbox)
	sb.AdminDir = r.ws.GitDir()
	sb.Violation = func(ctx context.Context, paths []string) { recordViolation(ctx, r.newGuard(), paths) }
	return sb
}

// sandbox is the sandbox for processes confined as c says: the workspace's admin dir is the
// caller's to add.
func (cf confiner) sandbox(ctx context.Context, c confinement) *loop.Sandbox {
	hooksDir, err := cf.repo.HooksDir(ctx) // core.hooksPath's, if set
	if err != nil {
		hooksDir = filepath.Join(cf.repo.GitDir, "hooks")
	}
	return &loop.Sandbox{
		Launcher: c.launcher, Landlock: c.landlock(), Shields: cf.shields(c), Network: cf.cfg.Network, Namespace: c.namespace,
		AllowWrite: expandHome(cf.cfg.AllowWrite),
		ObjectsDir: filepath.Join(cf.repo.GitDir, "objects"),
		// .norma/cache: ignored by .norma/.gitignore, like all of .norma but the config.
		CacheDir:    cf.repo.Path("cache"),
		CLISettings: &cf.repo.cliSettings,
		// The hooks and the directories holding them, the outer first (restoreModes' order).
		Modes: append([]string{cf.repo.GitDir, hooksDir}, hooks.Paths(hooksDir)...),
	}
}

// confineChecks confines the check commands run outside a step (the re-check before landing)
// as the run's are; dir is their logs' directory; done logs what was left running, and fails
// with the agent CLI settings they changed (put back).
func (cf confiner) confineChecks(ctx context.Context, dir string, log io.Writer) (context.Context, func() error, error) {
	c, err := cf.confinement()
	if err != nil {
		return ctx, nil, err
	}
	ctx, done := cf.confineChecksAs(ctx, c, dir, log)
	return ctx, done, nil
}

// confineChecksAs is confineChecks for a caller that has asked for the confinement already.
func (cf confiner) confineChecksAs(ctx context.Context, c confinement, dir string, log io.Writer) (context.Context, func() error) {
	if !c.namespace {
		fmt.Fprintf(log, "checks run without a pid namespace (%s): what they leave running is swept, and your daemons' unix sockets stay reachable\n", c.nsWhy)
	}
	ctx, done := loop.ConfineChecks(ctx, cf.sandbox(ctx, c), dir)
	return ctx, func() error {
		ev, ok, err := done()
		if ok {
			fmt.Fprintf(log, "\n%s: %s\n", ev.Type, ev.Message)
		}
		if err != nil {
			fmt.Fprintf(log, "\n%s\n", err)
		}
		return err
	}
}

// confineSetup runs a worktree.setup command through a sandbox launcher, as agents are
// confined: writable are the worktree it prepares, a private TMPDIR and sandbox.allow_write
// (package caches); the network is open (installing dependencies is what it is for). Mode off
// (or no Landlock) still contains it.
func (cf confiner) confineSetup(ctx context.Context, cmd *exec.Cmd) error {
	c, err := cf.confinement()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "git-norma-setup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	allow := expandHome(cf.cfg.AllowWrite)
	writable := append([]string{cmd.Dir, tmp}, allow...)
	restore := cf.repo.cliSettings.Guard(allow)
	err = sandbox.RunAlone(ctx, c.launcher, c.namespace, cmd, sandbox.Policy{Landlock: c.landlock(), Writable: writable, Network: true})
	if cerr := restore("worktree.setup", ""); cerr != nil {
		return cerr
	}
	return err
}

// noteUnconfined says once per run, live and as an event, that mode auto found no Landlock,
// and that the kernel refused the launcher its pid namespace (containment is then weaker).
func (r *run) noteUnconfined(ctx context.Context, live loop.LiveFunc) {
	c := r.pre.sandbox
	var notes []string
	if c.mode == sandbox.ModeAuto && !c.landlock() {
		notes = append(notes, "agents run unconfined: "+c.why+` (set "sandbox": {"mode": "required"} to refuse instead)`)
	}
	if !c.namespace {
		notes = append(notes, "agents run without a pid namespace ("+c.nsWhy+"): what they leave running is swept when their step ends, "+
			"but a process forking without pause may outlive it, and the unix sockets of your daemons (tmux, the session bus) stay reachable; git norma doctor says more")
	}
	for _, msg := range notes {
		say(live, r.pre.task.ID, "%s", msg)
		_ = r.st.AppendEvent(ctx, r.id, store.Event{TS: r.app.Now(), Type: "sandbox_unavailable", Message: msg})
	}
}

// processEnv is what every agent, check and setup command starts from: this environment
// without the variables that pin git to a repository (a hook's GIT_DIR), so each works where
// it runs.
func processEnv() []string { return git.StripRepoVars(os.Environ()) }

// expandHome turns a leading "~" into the home directory.
func expandHome(paths []string) []string {
	home, _ := os.UserHomeDir()
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		out = append(out, p)
	}
	return out
}

// doctorSandbox reports the Landlock ABI, the mode in force and how processes are contained.
func (cf confiner) doctorSandbox(rep *DoctorReport) {
	c, err := cf.confinement()
	switch {
	case err != nil && (c.mode == "" || c.why == ""):
		rep.add("sandbox", "fail", err.Error(), hintOf(err))
	case err != nil:
		rep.add("sandbox", "fail", fmt.Sprintf("mode %s, but %s", c.mode, c.why), hintOf(err))
	case c.mode == sandbox.ModeOff:
		rep.add("sandbox", "warn", fmt.Sprintf("mode off: agents are not confined (Landlock ABI %d); leftover processes are still killed", c.abi),
			`set "sandbox": {"mode": "auto"} in .norma/config.json`)
	case c.abi == 0:
		rep.add("sandbox", "warn", fmt.Sprintf("mode %s: agents run unconfined: %s", c.mode, c.why), "run on a Linux kernel with Landlock (5.13+)")
	default:
		detail := fmt.Sprintf("mode %s, Landlock ABI %d", c.mode, c.abi)
		if !cf.cfg.Network && c.abi < sandbox.NetworkABI {
			detail += fmt.Sprintf(" (network: false needs ABI %d; agents keep the network)", sandbox.NetworkABI)
		}
		rep.add("sandbox", "ok", detail, "")
	}
	if c.namespace {
		rep.add("containment", "ok", "pid namespace: no process of a step outlives it, and confined ones find your daemons' unix sockets hidden", "")
	} else if c.mode != "" {
		rep.add("containment", "warn", "no pid namespace ("+c.nsWhy+"): processes left running after a step are swept, but one that forks without pause may outlive it, and agents can reach the unix sockets of your daemons",
			"allow user namespaces (sysctl user.max_user_namespaces above 0; on Ubuntu, kernel.apparmor_restrict_unprivileged_userns=0), or run git-norma where they are allowed")
	}
}

// namespaceTurn waits for this user's turn to run confined commands as c allows, saying so if
// it has to, and returns the release of the turn. Without a pid namespace a confined command
// sees every process of its user and may change their resource limits (prlimit, which
// Landlock does not govern) — another run's launcher among them, between its look at its
// limits and the start of a check, whose tool then fails to start and whose `! grep` passes.
// So a run without one takes the turn alone (exclusive), runs in namespaces of their own share
// it. The turn is per user (the user's runs in other clones are processes of the same user);
// unconfined runs take turns of their own (unconfinedTurn). The lock is in a directory
// confined commands cannot write: $XDG_RUNTIME_DIR, else the user's cache directory.
func namespaceTurn(ctx context.Context, c confinement, live loop.LiveFunc, taskID string) (func(), error) {
	if !c.landlock() {
		return func() {}, nil
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		var err error
		if dir, err = os.UserCacheDir(); err != nil {
			dir = os.TempDir()
		}
	}
	dir = filepath.Join(dir, fmt.Sprintf("git-norma-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the directory of git-norma's turns: %w", err)
	}
	how := flock.Shared
	if !c.namespace {
		how = flock.Exclusive
	}
	now, cancel := context.WithCancel(ctx)
	cancel() // a first try that does not wait
	release, err := flock.Acquire(now, dir, 0, how)
	if err == nil || !errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return release, err
	}
	if c.namespace {
		say(live, taskID, "waiting for a git-norma run of yours without a pid namespace to finish: it runs alone")
	} else {
		say(live, taskID, "waiting for your other git-norma runs to finish: without a pid namespace (%s), runs take turns", c.nsWhy)
	}
	return flock.Acquire(ctx, dir, 0, how)
}
