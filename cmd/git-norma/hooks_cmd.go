package main

// hooksCmd groups hook installation.
type hooksCmd struct {
	Install   hooksInstallCmd   `cmd:"" help:"Add git-norma's blocks to the post-commit, pre-merge-commit and pre-push hooks (chained with existing ones)."`
	Uninstall hooksUninstallCmd `cmd:"" help:"Remove git-norma's blocks, leaving everything else in the hooks as it was."`
}
