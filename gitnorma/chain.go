package gitnorma

import "sync"

// chain runs functions in the background one at a time, in the order they were given: the
// mirrors that follow each step (git notes, the task's notes in the tracker) are written while
// the next step runs instead of holding it up, and still land in order. The run's steps and
// its lease's renewals (taskMirror.keepLease) give it functions from two goroutines.
type chain struct {
	mu   sync.Mutex
	done chan struct{} // closed when the last function given has returned
}

// then runs fn once every function given before it has returned.
func (c *chain) then(fn func()) {
	c.mu.Lock()
	prev, done := c.done, make(chan struct{})
	c.done = done
	c.mu.Unlock()
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		fn()
	}()
}

// wait returns once every function given so far has returned.
func (c *chain) wait() {
	c.mu.Lock()
	done := c.done
	c.mu.Unlock()
	if done != nil {
		<-done
	}
}
