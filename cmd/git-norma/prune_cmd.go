package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type pruneCmd struct {
	// KeepLast and KeepDays are nil when not given: then the retention config decides.
	KeepLast *int `help:"Keep the newest N runs (default: retention.keep_last; 0 turns this rule off)." placeholder:"N"`
	KeepDays *int `help:"Keep runs younger than N days (default: retention.keep_days; 0 turns this rule off)." placeholder:"N"`
	DryRun   bool `help:"Only say what would be removed."`
	Force    bool `help:"Also delete task branches whose work never landed, and runs whose directory keeps what the fallback guard replaced."`
	JSON     bool `help:"Print the report as JSON."`
}

func (c *pruneCmd) Run(env *Env) error {
	keepLast, err := keepFlag("--keep-last", c.KeepLast)
	if err != nil {
		return err
	}
	keepDays, err := keepFlag("--keep-days", c.KeepDays)
	if err != nil {
		return err
	}
	app, err := gitnorma.Open(env.Ctx, env.Dir)
	if err != nil {
		return err
	}
	rep, err := app.Prune(env.Ctx, gitnorma.PruneOptions{KeepLast: keepLast, KeepDays: keepDays, DryRun: c.DryRun, Force: c.Force})
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(env.IO.Out, rep)
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	for _, r := range rep.Runs {
		fmt.Fprintf(env.IO.Out, "%s run %s\n", verb, r)
	}
	for _, b := range rep.Branches {
		fmt.Fprintf(env.IO.Out, "%s branch %s\n", verb, b)
	}
	for _, k := range rep.Kept {
		env.Progress.Printf("kept %s", k)
	}
	return nil
}

// keepFlag is a --keep-* value for PruneOptions: not given, -1 (the retention config decides);
// given, a count that must not be negative.
func keepFlag(name string, v *int) (int, error) {
	switch {
	case v == nil:
		return -1, nil
	case *v < 0:
		return 0, &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("%s must be 0 or more, not %d", name, *v),
			Hint: "leave " + name + " out to use the retention config"}
	}
	return *v, nil
}
