package main

import (
	"fmt"
	"os"

	"github.com/git-norma/git-norma/gitnorma"
	"github.com/git-norma/git-norma/hooks"
)

// hookCmd is what the installed hook blocks call; git passes the hook's arguments through.
type hookCmd struct {
	Name string   `arg:"" enum:"pre-commit,post-commit,pre-merge-commit,pre-push" help:"The hook git is running."`
	Args []string `arg:"" optional:"" passthrough:"" help:"The hook's own arguments."`
}

func (c *hookCmd) Run(env *Env) error {
	if hooks.Internal(os.Environ()) {
		return nil // git-norma's own commits and merges do not re-trigger it
	}
	// Whatever state git-norma is in here, a hook only gates what it exists for: a repository
	// git-norma cannot read is reported in one line and git goes on.
	app, err := gitnorma.OpenForHook(env.Ctx, env.Dir)
	if err != nil {
		fmt.Fprintf(env.IO.Err, "git-norma: the %s hook checked nothing: %v\n", c.Name, err)
		return nil
	}
	inv := hooks.Invocation{Name: c.Name, Args: c.Args, Env: os.Environ(), Stdin: env.IO.In, Git: app.Repo.Git.In(env.Dir)}
	return hooks.Dispatch(env.Ctx, inv, app.HookHandler(env.Dir, env.IO.Err))
}
