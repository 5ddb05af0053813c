package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are set by install.sh with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

type versionCmd struct{}

func (c *versionCmd) Run(env *Env) error {
	v, rev := version, commit
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
	if v == "" {
		v = "dev"
	}
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(env.IO.Out, "git-norma version %s (commit %.12s, %s)\n", v, rev, runtime.Version())
	return nil
}
