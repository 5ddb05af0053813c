package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/loop/sandbox"
)

// IO are the streams a command uses: data on Out, progress and diagnostics on Err.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Env is what every command's Run receives.
type Env struct {
	Ctx context.Context
	IO  IO
	// Dir is the directory the command was started in.
	Dir string
	// Progress receives progress lines (stderr; only warnings with -q). See output_env.go.
	Progress *progressWriter
	// Verbose is -v: more detail on stderr.
	Verbose bool
	// Color paints stdout's words when it may be coloured (a TTY, no NO_COLOR, no --no-color).
	Color palette
}

// CLI is the command tree.
type CLI struct {
	globalFlags `embed:""`

	Init    initCmd    `cmd:"" help:"Set up git-norma in this repository (.norma/ with config, database, locks, runs)."`
	Task    taskCmd    `cmd:"" help:"Add, list and show tasks of the embedded backlog (.beads/issues.jsonl)."`
	Run     runCmd     `cmd:"" help:"Run Plan → Do → Check → Act on one task until it passes or a budget stops it; land a PASS."`
	Loop    loopCmd    `cmd:"" help:"Select the next ready task, run it, land it, and repeat until nothing is ready."`
	Next    nextCmd    `cmd:"" help:"Print the task the selection policy would run next, and why."`
	Pause   pauseCmd   `cmd:"" help:"Stop runs between steps and loops between tasks (.norma/PAUSE)."`
	Resume  resumeCmd  `cmd:"" help:"Undo git norma pause."`
	Status  statusCmd  `cmd:"" help:"Show recent runs, the live run and task branches; or one run's steps, or one task's runs."`
	Config  configCmd  `cmd:"" help:"Get, set or list keys of .norma/config.json (git norma help config says what each does)."`
	Check   checkCmd   `cmd:"" help:"Run a task's checks (its Verify commands and the project gates) in this worktree."`
	Land    landCmd    `cmd:"" help:"Land a task branch whose head passed verification (after run --no-land)."`
	Log     logCmd     `cmd:"" help:"Show the journal of a run or a task (from the store, or from git notes)."`
	Logs    logsCmd    `cmd:"" help:"Print a step's logs (stdout.txt, stderr.txt); -f follows a running run."`
	Prune   pruneCmd   `cmd:"" help:"Remove old runs (dirs, rows, worktrees) and landed task branches, by the retention config."`
	Notes   notesCmd   `cmd:"" help:"Share the journal notes with a remote."`
	Hooks   hooksCmd   `cmd:"" help:"Install or remove the git hooks that trigger checks and guard merges and pushes."`
	Hook    hookCmd    `cmd:"" hidden:"" help:"Run a hook handler (called by the installed hooks)."`
	Schema  schemaCmd  `cmd:"" help:"Print the JSON Schema of a role's input or output, for agent authors."`
	Doctor  doctorCmd  `cmd:"" help:"Check git, the backlog, the agents, the database, locks and worktrees; each problem with its fix."`
	Version versionCmd `cmd:"" help:"Print the git-norma version."`

	Help       helpCmd       `cmd:"" help:"Show the manual of git-norma or of one command (works without man)."`
	Man        manCmd        `cmd:"" help:"Print or install the man pages (git-norma(1), git-norma-<command>(1), gitnorma-config(5))."`
	Completion completionCmd `cmd:"" help:"Print the shell completion script for bash, zsh or fish."`
}

// appName and appDescription head the help and the manual.
const (
	appName        = "git norma"
	appDescription = "Drive AI coding agents through Plan → Do → Check → Act over your backlog, in git worktrees."
)

// exitRequest is how kong's exit (after --help) unwinds without ending the process.
type exitRequest int

// pipeStops is an output stream that calls stop once its reader went away.
type pipeStops struct {
	w    io.Writer
	stop func()
}

func (p pipeStops) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.stop()
	}
	return n, err
}

// silentExit is an exit code whose message was already printed.
type silentExit int

func (e silentExit) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// Main runs git-norma with args and returns the process exit code. Nothing below it exits.
func Main(args []string, stdio IO) (code int) {
	// git-norma re-executes itself as the sandbox launcher of a run's agents and check
	// commands (loop/sandbox). That hidden entry is no command: kong, help, completion and the man
	// pages never see it.
	if len(args) > 0 && args[0] == sandbox.Entry {
		return sandbox.Main(args[1:])
	}
	stopOn := []os.Signal{os.Interrupt, syscall.SIGTERM}
	// A closed terminal stops a run as Ctrl-C does, instead of killing it between two writes;
	// under nohup (SIGHUP ignored) catching it would undo the nohup.
	if !signal.Ignored(syscall.SIGHUP) {
		stopOn = append(stopOn, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopOn...)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C gets the default behaviour: exit at once
	}()
	// A reader of the output that went away (head had enough, a pager quit) stops the command
	// as Ctrl-C does. By default the next write would kill the process with SIGPIPE, wherever
	// that came: between a run's PASS and its landing, say. Asked for, SIGPIPE only makes the
	// write fail (EPIPE), which the streams turn into the stop.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	go func() {
		for range pipes {
		}
	}()
	stdio.Out, stdio.Err = pipeStops{stdio.Out, stop}, pipeStops{stdio.Err, stop}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(c)
			if code != 0 {
				code = gitnorma.ExitUsage
			}
		}
	}()
	var cli CLI
	kctx, err := parseArgs(&cli, args, stdio)
	var dir string
	if err == nil {
		dir, err = os.Getwd()
	}
	if err != nil {
		fmt.Fprintf(stdio.Err, "git norma: %v\n", err)
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(stdio.Err, "hint: %s\n", parseHint(pe, args))
			return gitnorma.ExitUsage
		}
		return gitnorma.ExitFatal // the model itself is broken, or the working directory is gone
	}
	env := newEnv(ctx, stdio, dir, cli.globalFlags)
	defer env.Progress.Flush()
	kctx.Bind(kctx.Model)
	// A command that takes a *gitnorma.App in its Run gets the repository it runs in, opened
	// (and its config read) before the command starts; commands that check their flags first,
	// or work outside an initialised repository, open it themselves.
	open := sync.OnceValues(func() (*gitnorma.App, error) { return gitnorma.Open(env.Ctx, env.Dir) })
	// The task commands get the repository's backlog, and log and logs its history, nothing
	// else of it. (Not providers that take the App: kong would prefix their errors with the
	// type's name.)
	for _, provider := range []any{open, part(open, (*gitnorma.App).Backlog), part(open, (*gitnorma.App).History)} {
		if err := kctx.BindToProvider(provider); err != nil {
			return report(stdio.Err, err)
		}
	}
	return report(stdio.Err, kctx.Run(env))
}

// parseArgs parses args with kong against the whole command tree, into cli.
func parseArgs(cli *CLI, args []string, stdio IO) (*kong.Context, error) {
	// kong sizes its help to the terminal only when it writes to one (an *os.File): it gets the
	// files under the streams' wrapper (pipeStops).
	out, errOut := stdio.Out, stdio.Err
	if f, ok := fileOf(out); ok {
		out = f
	}
	if f, ok := fileOf(errOut); ok {
		errOut = f
	}
	parser, err := kong.New(cli,
		kong.Name(appName),
		kong.Description(appDescription),
		kong.Writers(out, errOut),
		kong.Exit(func(c int) { panic(exitRequest(c)) }),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(helpPrinter),
	)
	if err != nil {
		return nil, err
	}
	return parser.Parse(args)
}

// part provides what of the App a command asks for, from the App the command line opened.
func part[T any](open func() (*gitnorma.App, error), of func(*gitnorma.App) T) func() (T, error) {
	return func() (T, error) {
		app, err := open()
		if err != nil {
			var none T
			return none, err
		}
		return of(app), nil
	}
}

// report prints an error with its hint and maps it to the exit code (DESIGN.md section 2).
func report(stderr io.Writer, err error) int {
	if err == nil {
		return gitnorma.ExitOK
	}
	var silent silentExit
	if errors.As(err, &silent) {
		return int(silent)
	}
	fmt.Fprintf(stderr, "git norma: %v\n", err)
	var ge *gitnorma.Error
	if errors.As(err, &ge) && ge.Hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", ge.Hint)
	}
	if errors.Is(err, context.Canceled) && (ge == nil || ge.Kind == nil) {
		return gitnorma.ExitInterrupted
	}
	return gitnorma.ExitCode(err)
}
