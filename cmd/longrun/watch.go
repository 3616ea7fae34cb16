package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/longrun-dev/longrun/client"
	"github.com/longrun-dev/longrun/internal/core/runes"
)

// follow runs first (the admission, or the first read) and then polls the operation until
// it ends, showing progress on stderr, and returns the exit status its outcome maps to.
// An interrupt stops the waiting, never the operation; so does timeout (when not zero).
// failed reports an error of first; hint, when set, is printed when an interrupt came before
// first's answer.
func (x *invocation) follow(ctx context.Context, api *client.Client, timeout time.Duration,
	first func(context.Context) (*client.Operation, error), failed func(error) int, hint string) int {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	interrupts := x.interrupts
	if interrupts == nil {
		interrupts = defaultInterrupts
	}
	signals, stop := interrupts()
	defer stop()
	go func() {
		select {
		case sig := <-signals:
			cancel(interrupted{sig})
		case <-ctx.Done():
		}
	}()

	op, err := first(ctx)
	if err != nil {
		var in interrupted
		if errors.As(context.Cause(ctx), &in) {
			fmt.Fprintln(x.stderr, "longrun: interrupted before the API answered")
			if hint != "" {
				fmt.Fprintln(x.stderr, hint)
			}
			return in.status()
		}
		return failed(err)
	}

	clock := x.clk
	start := clock.Now()
	if timeout > 0 {
		clock.setDeadline(start.Add(timeout))
	}
	defer clock.setDeadline(time.Time{})
	var show reporter = &plainReporter{w: x.stderr, clock: clock, start: start}
	if f, ok := x.stderr.(*os.File); ok && x.terminal(f) {
		show = newLiveReporter(f, clock, start)
	}
	show.change(*op)
	last := op
	if !op.State.IsDone() {
		var p *client.Poller
		p, err = api.NewPoller(op)
		if err == nil {
			var done *client.Operation
			done, err = p.PollUntilDone(ctx, &client.PollOptions{OnChange: func(o client.Operation) {
				show.change(o)
				last = &o
			}})
			if err == nil {
				last = done
			}
		}
	}
	show.stop()
	if err != nil {
		var in interrupted
		switch {
		case errors.As(context.Cause(ctx), &in):
			x.stopped(last, "interrupted")
			x.printLast(last)
			return in.status()
		case errors.Is(err, errTimedOut):
			x.stopped(last, fmt.Sprintf("-timeout %s ran out", timeout))
			x.printLast(last)
			return exitTimeout
		}
		return x.fail(err)
	}
	x.printOperation(last)
	return x.outcome(last)
}

// printLast prints the operation as last seen: the admission's answer when no poll has
// read it yet.
func (x *invocation) printLast(op *client.Operation) {
	if op.IdempotencyKey != "" {
		x.printAdmission(op)
		return
	}
	x.printOperation(op)
}

// stopped says that the waiting stopped, not the operation, and how to resume it.
func (x *invocation) stopped(op *client.Operation, why string) {
	fmt.Fprintf(x.stderr, "longrun: %s: stopped waiting; %s is still %s and goes on (it was not canceled)\n", why, op.OperationID, op.State)
	fmt.Fprintf(x.stderr, "%s   (to stop it: longrun cancel %s)\n", resumeHint(op.OperationID), op.OperationID)
}

// outcome is the exit status of an operation that reached its end.
func (x *invocation) outcome(op *client.Operation) int {
	problem := ""
	if op.Problem != nil {
		problem = ": " + op.Problem.Code
		if d := oneLine(op.Problem.Detail); d != "" {
			problem += ": " + d
		}
	}
	switch op.State {
	case client.StateSucceeded:
		return exitOK
	case client.StateFailed:
		fmt.Fprintf(x.stderr, "longrun: %s failed%s\n", op.OperationID, problem)
		return exitFailed
	case client.StateCanceled:
		fmt.Fprintf(x.stderr, "longrun: %s was canceled\n", op.OperationID)
		return exitCanceled
	case client.StateOutcomeUnknown:
		fmt.Fprintf(x.stderr, "longrun: %s: outcome unknown%s\n", op.OperationID, problem)
		fmt.Fprintf(x.stderr, "longrun: an operator settles it: longrun resolve %s -outcome succeeded|failed -reason …\n", op.OperationID)
		return exitUnknown
	}
	fmt.Fprintf(x.stderr, "longrun: %s stopped in state %s\n", op.OperationID, op.State)
	return exitAPI
}

// interrupted is the cause of a wait stopped by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// status is the shell's convention: 128 + the signal's number.
func (i interrupted) status() int {
	if s, ok := i.sig.(syscall.Signal); ok && s == syscall.SIGTERM {
		return 128 + int(syscall.SIGTERM)
	}
	return exitInterrupted
}

// errTimedOut ends a wait at its -timeout.
var errTimedOut = errors.New("longrun: -timeout ran out")

// watchClock is the client's clock as the CLI sees it: it knows when the next poll is due
// (for the live progress) and ends a wait at its deadline.
type watchClock struct {
	inner    client.Clock
	mu       sync.Mutex
	deadline time.Time
	wakeAt   time.Time // when the current wait ends; zero while not waiting
}

func (w *watchClock) Now() time.Time { return w.inner.Now() }

func (w *watchClock) Sleep(ctx context.Context, d time.Duration) error {
	now := w.inner.Now()
	w.mu.Lock()
	timedOut := !w.deadline.IsZero() && now.Add(d).After(w.deadline)
	if timedOut {
		d = max(w.deadline.Sub(now), 0)
	}
	w.wakeAt = now.Add(d)
	w.mu.Unlock()
	err := w.inner.Sleep(ctx, d)
	w.mu.Lock()
	w.wakeAt = time.Time{}
	w.mu.Unlock()
	if err == nil && timedOut {
		return errTimedOut
	}
	return err
}

func (w *watchClock) setDeadline(t time.Time) {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
}

// nextPoll is when the current wait ends, zero while a request is under way.
func (w *watchClock) nextPoll() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.wakeAt
}

// reporter shows a wait's progress.
type reporter interface {
	// change is called with each representation that says something new.
	change(op client.Operation)
	// stop ends the display.
	stop()
}

// sameView: nothing a reporter shows has changed.
func sameView(a, b *client.Operation) bool {
	return a.State == b.State && a.Version == b.Version && a.CancelRequested == b.CancelRequested &&
		reflect.DeepEqual(a.Progress, b.Progress) && reflect.DeepEqual(a.Awaiting, b.Awaiting)
}

// summary is what a reporter says of an operation: its state, progress (the percent too,
// unless a bar shows it) and the signal its work waits for.
func summary(op client.Operation, withPercent bool) []string {
	parts := []string{string(op.State)}
	if op.CancelRequested && op.State != client.StateCancelling && op.State != client.StateCanceled {
		parts = append(parts, "cancel requested")
	}
	if p := op.Progress; p != nil {
		parts = append(parts, stepsDone(*p, " steps"))
		if p.Percent != nil && withPercent {
			parts = append(parts, percent(*p.Percent))
		}
		if p.Message != nil && oneLine(*p.Message) != "" {
			parts = append(parts, fmt.Sprintf("%q", oneLine(*p.Message)))
		}
	}
	if w := awaiting(op); w != "" {
		parts = append(parts, w)
	}
	return parts
}

func seconds1(d time.Duration) string { return d.Round(time.Second).String() }

// plainReporter writes one line per change: for logs, CI and pipes.
type plainReporter struct {
	w     io.Writer
	clock client.Clock
	start time.Time
	last  *client.Operation
}

func (r *plainReporter) change(op client.Operation) {
	if r.last != nil && sameView(r.last, &op) {
		return
	}
	r.last = &op
	r.line(op, true)
}

// line writes op's line, with the next poll when one is due and withNext.
func (r *plainReporter) line(op client.Operation, withNext bool) {
	when := seconds1(r.clock.Now().Sub(r.start)) + " elapsed"
	if withNext && !op.State.IsDone() && op.RetryAfter > 0 {
		when += ", next poll in " + seconds1(op.RetryAfter)
	}
	fmt.Fprintf(r.w, "%s %s (%s)\n", op.OperationID, strings.Join(summary(op, true), ", "), when)
}

func (r *plainReporter) stop() {}

// liveReporter keeps one line up to date on a terminal: a bar when the progress has a
// percent or a total, a spinner otherwise, then the state, steps, message, time elapsed and
// the next poll. When the wait ends the line gives way to a plain one.
type liveReporter struct {
	w     *os.File
	clock *watchClock
	start time.Time
	bar   *progressbar.ProgressBar
	done  chan struct{}
	ended sync.WaitGroup
	plain *plainReporter

	mu        sync.Mutex
	last      *client.Operation
	changedAt time.Time
	bounded   bool // the bar has a length (a percent to show)
}

func newLiveReporter(f *os.File, clock *watchClock, start time.Time) *liveReporter {
	r := &liveReporter{w: f, clock: clock, start: start, done: make(chan struct{}),
		plain: &plainReporter{w: f, clock: clock, start: start}}
	r.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetWidth(20),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetSpinnerChangeInterval(0), // the spinner turns with each redraw, all of them tick's
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)
	r.ended.Add(1)
	go r.tick()
	return r
}

// tick refreshes the elapsed time and the countdown to the next poll.
func (r *liveReporter) tick() {
	defer r.ended.Done()
	t := time.NewTicker(125 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			r.mu.Lock()
			r.render()
			r.mu.Unlock()
		}
	}
}

func (r *liveReporter) change(op client.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && sameView(r.last, &op) {
		return
	}
	r.last, r.changedAt = &op, r.clock.Now()
	if pct, ok := barPercent(op.Progress); ok {
		if !r.bounded {
			r.bar.ChangeMax(100)
			r.bounded = true
		}
		// 100 would finish (and clear) the bar while the operation is still going.
		_ = r.bar.Set(min(pct, 99))
	}
	r.render()
}

// barPercent is what the bar shows: the worker's percent, or else the share of the steps.
func barPercent(p *client.Progress) (int, bool) {
	switch {
	case p == nil:
		return 0, false
	case p.Percent != nil:
		return int(min(max(*p.Percent, 0), 100)), true
	case p.TotalSteps != nil && *p.TotalSteps > 0:
		return min(p.CompletedSteps*100 / *p.TotalSteps, 100), true
	}
	return 0, false
}

// render redraws the line; r.mu is held.
func (r *liveReporter) render() {
	if r.last == nil {
		return
	}
	now := r.clock.Now()
	parts := append([]string{r.last.OperationID}, summary(*r.last, !r.bounded)...)
	parts = append(parts, seconds1(now.Sub(r.start)))
	next := r.clock.nextPoll()
	if next.IsZero() && r.last.RetryAfter > 0 {
		next = r.changedAt.Add(r.last.RetryAfter) // what the poller waits next
	}
	if next.After(now) {
		left := (next.Sub(now) + time.Second - 1) / time.Second * time.Second // rounded up: never "in 0s"
		parts = append(parts, "next poll in "+left.String())
	} else {
		parts = append(parts, "polling")
	}
	text := strings.Join(parts, " · ")
	width, _, err := term.GetSize(int(r.w.Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	r.bar.Describe(runes.Cut(text, max(width-30, 10))) // the spinner or bar and its percent take the rest
}

func (r *liveReporter) stop() {
	close(r.done)
	r.ended.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.bar.Finish() // clears the line
	_ = r.bar.Exit()
	if r.last != nil {
		r.plain.line(*r.last, false) // no more polls
	}
}
