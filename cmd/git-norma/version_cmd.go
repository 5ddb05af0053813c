package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/alecthomas/kong"
)

// version and commit are set by install.sh with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

type versionCmd struct {
	JSON bool `help:"Print version, commit and Go version as JSON."`
}

// versionInfo is the version and commit from -ldflags, else from the build info.
func versionInfo() (v, rev string) {
	v, rev = version, commit
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	return cmp.Or(v, "dev"), cmp.Or(rev, "unknown")
}

func (c *versionCmd) Run(env *Env) error {
	v, rev := versionInfo()
	if c.JSON {
		return printJSON(env.IO.Out, map[string]string{"version": v, "commit": rev, "go": runtime.Version()})
	}
	fmt.Fprintln(env.IO.Out, versionLine())
	return nil
}

func versionLine() string {
	v, rev := versionInfo()
	return fmt.Sprintf("git-norma version %s (commit %.12s, %s)", v, rev, runtime.Version())
}

// versionFlag is --version, as most programs (and git itself) take it: the version, exit 0.
type versionFlag bool

// BeforeReset prints the version before anything else is parsed or required.
func (versionFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprintln(app.Stdout, versionLine())
	app.Exit(0)
	return nil
}
