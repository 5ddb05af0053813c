package main

// taskCmd groups the embedded backlog's commands.
type taskCmd struct {
	Add     taskAddCmd     `cmd:"" help:"Add a task; prints its id."`
	List    taskListCmd    `cmd:"" help:"List every task."`
	Show    taskShowCmd    `cmd:"" help:"Show one task."`
	Unblock taskUnblockCmd `cmd:"" help:"Give a task blocked by three failing runs back to selection (clears its strike count)."`
	Accept  taskAcceptCmd  `cmd:"" help:"Accept tasks an agent filed (norma-proposed) after reading their Verify lines: selection takes them again."`
	Edit    taskEditCmd    `cmd:"" help:"Change a task's title, description, acceptance criteria or priority."`
	Close   taskCloseCmd   `cmd:"" help:"Close a task by hand."`
	Reopen  taskReopenCmd  `cmd:"" help:"Open a closed task again."`
	Label   taskLabelCmd   `cmd:"" help:"Add or remove a task's labels."`
	Dep     taskDepCmd     `cmd:"" help:"Add a dependency between tasks."`
}
