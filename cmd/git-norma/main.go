// Command git-norma is the git extension that drives AI coding agents through a fixed
// Plan → Do → Check → Act loop over a task backlog. git runs it as `git norma ...`.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
