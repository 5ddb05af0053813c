package gitnorma

import (
	"fmt"

	"github.com/git-norma/git-norma/loop"
)

// say tells the user, as it happens, something a run or loop did that is not a step.
func say(live loop.LiveFunc, taskID, format string, args ...any) {
	if live != nil {
		live(loop.Live{Kind: loop.Notice, TaskID: taskID, Text: fmt.Sprintf(format, args...)})
	}
}

// warn is say for a warning, which the command line shows even with -q.
func warn(live loop.LiveFunc, taskID, format string, args ...any) {
	if live != nil {
		live(loop.Live{Kind: loop.Notice, TaskID: taskID, Text: fmt.Sprintf(format, args...), Warning: true})
	}
}
