// Package clocktest is a clock for tests of code that waits (the client's retries, the
// CLI's polling): Sleep records the wait and moves the time forward by it at once, so
// nothing waits for real and every wait can be asserted.
package clocktest

import (
	"context"
	"sync"
	"time"
)

// Clock is a manual clock; safe for concurrent use.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// New is a clock at now.
func New(now time.Time) *Clock { return &Clock{now: now} }

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the clock on by d and records the wait; a context already done ends it first.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// Advance moves the clock on by d without a wait.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Waits are the waits slept so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
