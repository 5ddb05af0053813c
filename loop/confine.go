package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/git-norma/git-norma/loop/sandbox"
)

// Sandbox is how a run confines the processes its steps start (agents and check commands):
// each goes through git-norma's launcher (package sandbox), which contains it always and
// restricts its writes with Landlock when Landlock is set.
type Sandbox struct {
	// Launcher is the binary to re-execute as the launcher: git-norma itself.
	Launcher string
	// Landlock confines writes; without it processes are only contained.
	Landlock bool
	// Shields says Landlock also keeps processes out of the workspace of a step they do not
	// work in and the repository's shared places: sandbox.allow_write opens none of them.
	Shields bool
	// Network allows TCP bind and connect.
	Network bool
	// Namespace starts each launcher in a pid namespace of its own (sandbox.Namespaces says
	// whether the kernel allows it): then no process of a step can outlive it.
	Namespace bool
	// AllowWrite are the user's extra writable paths (sandbox.allow_write).
	AllowWrite []string
	// ObjectsDir is the repository's object store: each step's private one borrows from it
	// (an alternate) and never writes into it.
	ObjectsDir string
	// CacheDir holds the cache homes of confined processes (XDG_CACHE_HOME, GOCACHE, ...):
	// agentCacheDir and checkCacheDir inside it, kept across steps and runs. Empty: none.
	CacheDir string
	// AdminDir is the workspace's own git directory (<gitdir>/worktrees/<name>: its index
	// and HEAD), which an agent's git add must write. Check commands do not get it.
	AdminDir string
	// Modes are files and directories whose mode no confined process may change (git-norma's
	// hooks and the directories holding them: git skips a hook that is not executable or
	// that it cannot reach). Landlock governs no metadata: a step's processes can chmod what
	// they cannot write, so a changed mode is put back when the step ends, in this order
	// (a directory before what it holds, which cannot be chmodded while it is closed).
	Modes []string
	// CLISettings is the process's record of the agent CLIs' settings, shared by its runs
	// (nil: each group of processes records its own).
	CLISettings *CLISettings
	// Violation records a guard violation of the run (the paths, each with its fate), for the
	// user to see before another run starts. Nil: none is recorded.
	Violation func(ctx context.Context, paths []string)
}

// putBackWatched puts back what the step's processes (who) changed of what no confined
// process may change though Landlock lets it — the CLI settings under allow_write (see
// cliConfigFiles) and the modes of Sandbox.Modes — whatever became of them, and turns any
// change into the step's guard violation; agentErr stays the step's error otherwise.
func (s *stepSandbox) putBackWatched(ctx context.Context, who string, agentErr error) error {
	if !s.started {
		return agentErr
	}
	cli, modes := s.cfg.CLISettings.restore(s.cli, filepath.Join(s.stepDir, "cli-settings")), s.restoreModes()
	if len(cli)+len(modes) == 0 {
		return agentErr
	}
	if s.cfg.Violation != nil {
		s.cfg.Violation(context.WithoutCancel(ctx), append(slices.Clone(cli), modes...))
	}
	if len(modes) > 0 {
		agentErr = &ProtocolError{Kind: ErrKindGuard, Msg: guardFinding(agentErr,
			fmt.Sprintf("%s changed the mode of git-norma's hooks, which git skips when not executable: %s", who, strings.Join(modes, ", ")))}
	}
	if len(cli) > 0 {
		agentErr = cliConfigErr(who, cli, agentErr)
	}
	return agentErr
}

// recordStart records what putBackWatched puts back, as the step's first process starts.
func (s *stepSandbox) recordStart() {
	s.cli = s.cfg.CLISettings.snapshot(s.cfg.AllowWrite)
	s.modes = s.cfg.CLISettings.modesOf(s.cfg.Modes)
}

// restoreModes puts back the modes of Sandbox.Modes that the step's processes changed, and
// names each with its fate.
func (s *stepSandbox) restoreModes() []string {
	var changed []string
	for _, path := range s.cfg.Modes {
		before, ok := s.modes[path]
		if !ok {
			continue
		}
		st, err := os.Lstat(path)
		if err != nil || st.Mode() == before {
			continue // gone: a write, which Landlock refuses (and the user may remove a hook)
		}
		fate := fmt.Sprintf("put back to %04o", before.Perm())
		if err := os.Chmod(path, before); err != nil { // with its setgid bit (a shared repository's directories)
			fate = "not put back: " + err.Error()
		}
		changed = append(changed, fmt.Sprintf("%s (mode %04o, %s)", path, st.Mode().Perm(), fate))
	}
	slices.Sort(changed)
	return changed
}

// KilledEvent is the step event naming the processes a step left running, which were killed.
const KilledEvent = "sandbox_killed"

// stepSandbox is the sandbox of one step: the private directory its processes get (TMPDIR
// and git objects, emptied when the step ends), the run's launcher, and what was killed.
type stepSandbox struct {
	cfg      *Sandbox
	stepDir  string
	private  *privateDir
	launcher *launcher
	// started says a process of the step was started (and so got the private directory).
	started bool

	mu     sync.Mutex
	killed []sandbox.Process
	// tampered says why a command of the step started through a new launcher.
	tampered string
	// cli is what the CLI settings files under allow_write held before the step's first
	// process started (CLISettings.snapshot); modes the modes of Sandbox.Modes then.
	cli   []cliFile
	modes map[string]os.FileMode
}

// privateSubdirs are the private directory's parts confined processes may write; the
// directory itself they may not, so they cannot replace either part.
var privateSubdirs = []string{"tmp", "objects"}

// privateDir is the directory confined processes get as TMPDIR and as their git object store
// (tmp/ and objects/). A run makes it once, when its first process starts, and empties it
// after each step: making and removing three directories per step cost an iteration more
// than its whole bookkeeping on a disk slow to create files (docs/performance.md).
type privateDir struct {
	mu   sync.Mutex
	path string
}

// get is the directory, made if there is none yet.
func (p *privateDir) get() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path != "" {
		return p.path, nil
	}
	path, err := os.MkdirTemp("", "git-norma-step-")
	if err != nil {
		return "", err
	}
	for _, sub := range privateSubdirs {
		if err := os.Mkdir(filepath.Join(path, sub), 0o700); err != nil {
			os.RemoveAll(path)
			return "", err
		}
	}
	p.path = path
	return path, nil
}

// empty removes what the step's processes left in it: a subdirectory that is not empty is made
// again (os.RemoveAll follows no symbolic link, so a tmp/ an unconfined agent replaced by a
// link to the user's files loses the link only). Should anything resist, the directory goes as
// a whole and the next step gets a new one: no step sees another's files.
func (p *privateDir) empty() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		return
	}
	for _, sub := range privateSubdirs {
		dir := filepath.Join(p.path, sub)
		if st, err := os.Lstat(dir); err == nil && st.IsDir() {
			if f, err := os.Open(dir); err == nil {
				_, err = f.Readdirnames(1)
				f.Close()
				if errors.Is(err, io.EOF) {
					continue // empty, as nearly always
				}
			}
		}
		if os.RemoveAll(dir) != nil || os.Mkdir(dir, 0o700) != nil {
			os.RemoveAll(p.path)
			p.path = ""
			return
		}
	}
	homes, _ := filepath.Glob(filepath.Join(p.path, freshCachePrefix+"*"))
	for _, home := range homes {
		_ = os.RemoveAll(home)
	}
}

// remove removes the directory and everything in it.
func (p *privateDir) remove() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path != "" {
		os.RemoveAll(p.path)
		p.path = ""
	}
}

type stepSandboxKey struct{}

// checkScopeKey marks the context of check commands: they run in their own directory and
// must not write the workspace's git admin dir.
type checkScopeKey struct{}

func withStepSandbox(ctx context.Context, s *stepSandbox) context.Context {
	return context.WithValue(ctx, stepSandboxKey{}, s)
}

func checkScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, checkScopeKey{}, true)
}

// close empties the private directory: what the step's processes left in TMPDIR and the git
// objects they wrote, which never enter the repository.
func (s *stepSandbox) close() {
	if s.started {
		s.private.empty()
	}
}

// event is the step event naming the processes killed at the end of the step's commands.
func (s *stepSandbox) event() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.killed) == 0 {
		return Event{}, false
	}
	names := make([]string, len(s.killed))
	for i, p := range s.killed {
		names[i] = OneLine(p.String(), 200)
	}
	return Event{Type: KilledEvent,
		Message: fmt.Sprintf("killed %d process(es) left running after the step's command ended: %s", len(s.killed), strings.Join(names, ", ")),
		Data:    map[string]any{"processes": s.killed}}, true
}

// TamperedEvent is the step event saying that an earlier command of the run changed its
// launcher for good, and the step's command started through a new one.
const TamperedEvent = "sandbox_tampered"

// events are the step's sandbox events: the processes it left running, the new launcher its
// command needed, and, when it started processes under Landlock, the refused operations its
// logs report.
func (s *stepSandbox) events(logs ...string) []Event {
	var evs []Event
	if ev, ok := s.event(); ok {
		evs = append(evs, ev)
	}
	if s.tampered != "" {
		evs = append(evs, Event{Type: TamperedEvent, Message: s.tampered + "; the step's command started through a new launcher"})
	}
	if s.cfg.Landlock && s.started {
		if ev, ok := deniedEvent(logs...); ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

func (s *stepSandbox) record(killed []sandbox.Process) {
	s.mu.Lock()
	s.killed = append(s.killed, killed...)
	s.mu.Unlock()
}

// errNoSandbox refuses to start a process outside a step sandbox: nothing git-norma starts
// runs unconfined and uncontained.
var errNoSandbox = errors.New("no step sandbox to start the command in")

// confine is the step sandbox ctx carries and the policy cmd starts with in it; cmd gets the
// environment that goes with it. The writable places are cmd's directory, the private
// directory, the user's allow_write, for an agent its step directory and its workspace's git
// admin dir, and when confined the cache home of agents or of checks.
func confine(ctx context.Context, cmd *exec.Cmd) (*stepSandbox, sandbox.Policy, error) {
	s, _ := ctx.Value(stepSandboxKey{}).(*stepSandbox)
	if s == nil {
		return nil, sandbox.Policy{}, errNoSandbox
	}
	if cmd.Err != nil {
		return nil, sandbox.Policy{}, cmd.Err // the command was not found: say so as exec would
	}
	private, err := s.private.get()
	if err != nil {
		return nil, sandbox.Policy{}, fmt.Errorf("create the private directory of confined processes: %w", err)
	}
	if !s.started {
		s.recordStart()
	}
	s.started = true
	var writable []string
	if ctx.Value(checkScopeKey{}) == nil {
		// An agent writes its answers there. A check command is never told of it, and it is where
		// git-norma makes what it trusts later (git norma check's is the run's directory, which
		// holds the re-check's directory and log of git norma land; a completion check's holds
		// its scratch worktree, which git worktree remove --force would remove through a link).
		writable = append(writable, s.stepDir)
	}
	for _, sub := range privateSubdirs {
		writable = append(writable, filepath.Join(private, sub))
	}
	if cmd.Dir != "" {
		writable = append(writable, cmd.Dir)
	}
	if ctx.Value(checkScopeKey{}) == nil && s.cfg.AdminDir != "" {
		writable = append(writable, s.cfg.AdminDir)
	}
	writable = append(writable, s.cfg.AllowWrite...)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "TMPDIR="+filepath.Join(private, "tmp"))
	if s.cfg.Landlock && s.cfg.CacheDir != "" {
		// Unconfined, the tools keep the user's caches; confined, they could not write them.
		home, err := s.cacheHome(ctx.Value(checkScopeKey{}) != nil)
		if fresh, ok := ctx.Value(freshCachesKey{}).(*freshCacheHome); ok {
			// A confirming check: nothing earlier commands cached, an empty home of its own.
			home, err = fresh.in(private)
		}
		if err != nil {
			return nil, sandbox.Policy{}, fmt.Errorf("create the cache home of confined processes: %w", err)
		}
		writable = append(writable, home)
		cmd.Env = withCacheHome(cmd.Env, home, s.cfg.AllowWrite)
	}
	if s.cfg.Landlock && s.cfg.ObjectsDir != "" {
		// git add, diff and stash work; new objects land in the private store. Only when
		// confined: an unconfined agent can move refs, and a ref must never name an object
		// that lives in a store removed with the step.
		cmd.Env = append(cmd.Env, "GIT_OBJECT_DIRECTORY="+filepath.Join(private, "objects"),
			"GIT_ALTERNATE_OBJECT_DIRECTORIES="+s.cfg.ObjectsDir)
	}
	return s, sandbox.Policy{Landlock: s.cfg.Landlock, Writable: writable, Network: s.cfg.Network}, nil
}

// launcher is a run's serving launcher (sandbox.Server), started with the run's first
// confined command and ended with the run.
type launcher struct {
	mu  sync.Mutex
	srv *sandbox.Server
}

// get is the launcher, started (in dir) if there is none yet.
func (l *launcher) get(cfg *Sandbox, dir string) (*sandbox.Server, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil && !l.srv.Running() {
		// It died (without a pid namespace, a command can kill it): the next command gets a
		// new one.
		l.srv.Close()
		l.srv = nil
	}
	if l.srv == nil {
		srv, err := sandbox.StartServer(cfg.Launcher, dir, cfg.Namespace)
		if err != nil {
			return nil, err
		}
		l.srv = srv
	}
	return l.srv, nil
}

// close ends the launcher, if one was started.
func (l *launcher) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv != nil {
		l.srv.Close()
		l.srv = nil
	}
}

// ConfineChecks is the context under which RunChecks confines and contains the check commands
// it starts outside a run's steps (the re-check before landing), with dir as their step
// directory. done removes their private directory and returns the sandbox_killed event, if
// any process was left running, and the guard violation of CLI settings they changed (put
// back, see putBackWatched).
func ConfineChecks(ctx context.Context, sb *Sandbox, dir string) (_ context.Context, done func() (Event, bool, error)) {
	s := &stepSandbox{cfg: sb, stepDir: dir, private: &privateDir{}, launcher: &launcher{}}
	return checkScope(withStepSandbox(ctx, s)), func() (Event, bool, error) {
		s.launcher.close()
		s.private.remove()
		ev, ok := s.event()
		return ev, ok, s.putBackWatched(ctx, "the checks", nil)
	}
}
