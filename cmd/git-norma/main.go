// Command git-norma is the git extension that drives AI coding agents through a fixed
// Plan → Do → Check → Act loop over a task backlog. git runs it as `git norma ...`.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	tuneGC()
	os.Exit(Main(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}

// tuneGC trades a little memory for less collection work: git-norma's live heap is a few MB
// (agent output streams to files, never into memory), so the default GOGC=100 collects every
// couple of MB allocated — several times per iteration of a run. A 256 MiB soft limit bounds
// what GOGC=400 lets an unusually large heap (a huge status listing, say) grow to, well above
// any live heap, so the collector never thrashes against it. GOGC or GOMEMLIMIT in the
// environment win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}
