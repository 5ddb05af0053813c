package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/alecthomas/kong"

	"github.com/git-norma/git-norma/gitnorma"
)

type manCmd struct {
	Page    string `arg:"" optional:"" help:"The page to print as roff: a command (run), config, or a page name (default: git-norma)."`
	Install string `placeholder:"DIR" help:"Write every page into DIR/man1 and DIR/man5 (a MANPATH directory, e.g. ~/.local/share/man) instead."`
	List    bool   `help:"List the pages, one name(section) a line."`
}

func (c *manCmd) Run(env *Env, app *kong.Application) error {
	pages, err := manPages(app)
	if err != nil {
		return err
	}
	v, _ := versionInfo()
	switch {
	case c.List:
		for _, p := range pages {
			fmt.Fprintln(env.IO.Out, p.ref())
		}
		return nil
	case c.Install != "":
		n, err := installManPages(pages, c.Install, v)
		if err == nil {
			env.Progress.Printf("installed %d man pages in %s (man git-norma; git norma --help)", n, c.Install)
		}
		return err
	}
	p := findPage(pages, c.Page)
	if p == nil {
		return &gitnorma.Error{Kind: gitnorma.ErrUsage, Err: fmt.Errorf("no manual page for %q", c.Page),
			Hint: "git norma man --list shows them"}
	}
	_, err = fmt.Fprint(env.IO.Out, p.roff(v))
	return err
}

// installManPages writes every page as DIR/manN/NAME.N (atomically, each through a temp file)
// and removes pages of commands that no longer exist.
func installManPages(pages []*page, dir, version string) (int, error) {
	var written []string
	for _, p := range pages {
		sub := filepath.Join(dir, fmt.Sprintf("man%d", p.section))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return 0, err
		}
		path := filepath.Join(sub, fmt.Sprintf("%s.%d", p.name, p.section))
		if err := os.WriteFile(path+".tmp", []byte(p.roff(version)), 0o644); err != nil {
			return 0, err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return 0, err
		}
		written = append(written, path)
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "man1", "git-norma-*.1"))
	for _, s := range stale {
		if !slices.Contains(written, s) {
			_ = os.Remove(s)
		}
	}
	return len(written), nil
}
