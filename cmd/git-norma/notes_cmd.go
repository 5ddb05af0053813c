package main

// notesCmd groups the journal sync commands.
type notesCmd struct {
	Push notesPushCmd `cmd:"" help:"Push the journal (refs/notes/norma) to a remote, merging theirs first if needed; never forced."`
	Pull notesPullCmd `cmd:"" help:"Fetch a remote's journal into refs/notes/remotes/<remote>/norma and merge it (cat_sort_uniq)."`
}
