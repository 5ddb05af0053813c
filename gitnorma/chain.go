package gitnorma

// chain runs functions in the background one at a time, in the order they were given: the
// mirrors that follow each step (git notes, the task's notes in the tracker) are written while
// the next step runs instead of holding it up, and still land in order.
//
// A chain is used from one goroutine; the functions run on others.
type chain struct {
	done chan struct{} // closed when the last function given has returned
}

// then runs fn once every function given before it has returned.
func (c *chain) then(fn func()) {
	prev, done := c.done, make(chan struct{})
	c.done = done
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
	if c.done != nil {
		<-c.done
	}
}
