package main

import (
	"fmt"

	"github.com/git-norma/git-norma/gitnorma"
)

type doctorCmd struct {
	JSON bool `help:"Print the findings as JSON."`
}

func (c *doctorCmd) Run(env *Env, app *gitnorma.App) error {
	rep := app.Doctor(env.Ctx)
	if c.JSON {
		if err := printJSON(env.IO.Out, rep); err != nil {
			return err
		}
	} else {
		w := table(env.IO.Out)
		for _, f := range rep.Findings {
			fmt.Fprintf(w, "%s\t%s\t%s\n", f.Status, f.Check, f.Detail)
			if f.Fix != "" {
				fmt.Fprintf(w, "\t\tfix: %s\n", f.Fix)
			}
		}
		w.Flush()
	}
	if !rep.OK {
		return silentExit(gitnorma.ExitFail)
	}
	return nil
}
