package main

import (
	"time"

	"github.com/git-norma/git-norma/gitnorma"
)

type resumeCmd struct {
	TrustStore bool `name:"trust-store" help:"Also vouch for every record of the run store after unconfined agents or checks ran here: a PASS read from it lands without being checked again, and the hooks take it (look at git norma status first)."`
}

func (c *resumeCmd) Run(env *Env, app *gitnorma.App) error {
	cleared, err := app.Repo.ClearViolations(env.Ctx, app.Now())
	if err != nil {
		return err
	}
	for _, v := range cleared {
		env.Progress.Printf("cleared the guard violation of %s", v.Summary())
	}
	if c.TrustStore {
		u, had, err := app.Repo.TrustStore(env.Ctx)
		switch {
		case err != nil:
			return err
		case had:
			env.Progress.Printf("the run store is trusted again (unconfined processes ran here since %s: %s)", u.At.Local().Format(time.DateTime), u.What)
		default:
			env.Progress.Printf("the run store was trusted already: no unconfined process ran here")
		}
	}
	was, err := app.Repo.Resume()
	if err != nil {
		return err
	}
	if !was && (len(cleared) > 0 || c.TrustStore) {
		return nil
	}
	if !was {
		env.Progress.Printf("not paused")
		return nil
	}
	env.Progress.Printf("resumed: runs and loops may go on")
	return nil
}
