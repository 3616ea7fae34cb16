package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// Poller follows one operation to its end by reading its status URL: the admission's
// Location, then each representation's statusUrl, never a URL it builds. PollUntilDone
// does it all; Poll, Done and Result step by hand. Cancelling a context stops the polling,
// never the operation.
//
// It stops at succeeded, failed and canceled, and at outcome_unknown (not terminal, but
// only an operator changes it), returning the operation with a nil error in every case:
// the call worked, whatever the operation did (Operation.Err tells them apart). It also
// stops at an answer polling cannot change, 401, 403, 404 (another 4xx but 408 and 429
// too), returned as its *ProblemError, from then on by Result as well.
//
// A Poller is not safe for concurrent use. To go on polling later or elsewhere (after a
// restart, in another process), keep its ResumeToken and pass it to
// Client.NewPollerFromResumeToken.
type Poller struct {
	c        *Client
	next     *url.URL   // where the next poll reads
	op       *Operation // the newest representation known
	reported *Operation // the last one OnChange saw
	polled   bool       // whether a poll has been made
	done     bool
	err      error // the answer that stopped polling for good
}

// ErrPollerNotDone is Poller.Result's answer before the operation has reached its end.
var ErrPollerNotDone = errors.New("longrun: the operation has not reached its end yet")

// NewPoller returns a Poller of op, starting at its Location (what Create returned) or else
// its StatusURL. Either is resolved against the client's base URL and must stay on its
// origin. An op that is already done (State.IsDone) makes a Poller that is Done at once.
func (c *Client) NewPoller(op *Operation) (*Poller, error) {
	if op == nil {
		return nil, errors.New("longrun: NewPoller: nil operation")
	}
	ref := op.Location
	if ref == "" {
		ref = op.StatusURL
	}
	if ref == "" {
		return nil, errors.New("longrun: NewPoller: the operation has neither a Location nor a statusUrl")
	}
	next, err := c.resolve(ref)
	if err != nil {
		return nil, err
	}
	cp := *op
	return &Poller{c: c, next: next, op: &cp, done: op.State.IsDone()}, nil
}

// Done reports whether polling is over: the operation reached its end (State.IsDone), or
// an answer stopped the poller for good.
func (p *Poller) Done() bool { return p.done }

// Result is the operation at its end, or the error that stopped the poller for good, or
// ErrPollerNotDone. It does no I/O.
func (p *Poller) Result() (*Operation, error) {
	switch {
	case p.err != nil:
		return nil, p.err
	case !p.done:
		return nil, ErrPollerNotDone
	}
	return p.Operation(), nil
}

// Operation is the newest representation the poller knows: what it was created with until
// a poll has read one.
func (p *Poller) Operation() *Operation {
	cp := *p.op
	return &cp
}

// Poll reads the status URL once and returns the newest representation (one older than a
// version already seen, a lagging read, does not replace it). Once Done it returns the
// result without I/O. A failure is returned as it came: a *TransportError, a
// *ProblemError (stopping the poller for good when it is 401, 403, 404 or another 4xx but
// 408 and 429).
func (p *Poller) Poll(ctx context.Context) (*Operation, error) {
	if p.done {
		return p.Result()
	}
	p.polled = true
	next := p.next.String()
	resp, body, err := p.c.send(ctx, func() (*http.Request, error) { return http.NewRequest(http.MethodGet, next, nil) }, nil)
	if err != nil {
		if final(err) {
			p.done, p.err = true, err
		}
		return nil, err
	}
	op, err := p.c.decodeOperation(resp, body)
	if err != nil {
		return nil, err
	}
	if op.Version >= p.op.Version {
		if op.StatusURL != "" {
			u, err := p.c.resolve(op.StatusURL)
			if err != nil {
				return nil, err
			}
			p.next = u
		}
		p.op = op
	}
	p.done = p.op.State.IsDone()
	return p.Operation(), nil
}

// final: an answer polling again cannot change.
func final(err error) bool {
	var pe *ProblemError
	return errors.As(err, &pe) && pe.Status >= 400 && pe.Status < 500 && !pollTransient(err)
}

// pollTransient: a failure the next poll may not have: no answer, 408, 429 and 5xx.
func pollTransient(err error) bool {
	var te *TransportError
	if errors.As(err, &te) {
		return true
	}
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Status >= 500 || pe.Status == http.StatusTooManyRequests || pe.Status == http.StatusRequestTimeout
}

// PollOptions are PollUntilDone's options; zero fields are defaults.
type PollOptions struct {
	// MinDelay and MaxDelay bound the wait between polls when the answer gave no
	// Retry-After: the n-th consecutive poll that brought nothing new is followed by a wait
	// drawn uniformly from [MinDelay, min(MaxDelay, MinDelay·2ⁿ)] (exponential backoff with
	// full jitter; a change starts it again). Defaults 1 s and 30 s. A Retry-After is
	// waited as given.
	MinDelay, MaxDelay time.Duration
	// MaxTransientFailures is how many consecutive transient failures (a *TransportError,
	// a 5xx, 408 or 429) polling tolerates, waiting their Retry-After or the backoff; the
	// next one ends PollUntilDone with it. Default 5; negative tolerates none.
	MaxTransientFailures int
	// OnChange, when set, is called (on PollUntilDone's goroutine) with the first
	// representation the poller reads and with every later one that differs from the one
	// before in state, version, cancellation or progress, the final one included; a repeated
	// representation is not reported again.
	OnChange func(Operation)
}

func (o *PollOptions) withDefaults() PollOptions {
	var r PollOptions
	if o != nil {
		r = *o
	}
	if r.MinDelay <= 0 {
		r.MinDelay = time.Second
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 30 * time.Second
	}
	r.MaxDelay = max(r.MaxDelay, r.MinDelay)
	switch {
	case r.MaxTransientFailures == 0:
		r.MaxTransientFailures = 5
	case r.MaxTransientFailures < 0:
		r.MaxTransientFailures = 0
	}
	return r
}

// PollUntilDone polls until the operation reaches its end and returns it (Result's
// answer), waiting between polls what each answer's Retry-After asks for (the admission's
// too, before the first poll) or else the backoff opts bounds. It returns early with the
// error that stopped the poller for good, a failure past MaxTransientFailures, or the
// context's error. opts may be nil.
func (p *Poller) PollUntilDone(ctx context.Context, opts *PollOptions) (*Operation, error) {
	o := opts.withDefaults()
	if !p.polled && !p.done && p.op.RetryAfter > 0 {
		if err := p.c.clock.Sleep(ctx, p.op.RetryAfter); err != nil {
			return nil, err
		}
	}
	failures, quiet := 0, 0
	for {
		if p.done {
			return p.Result()
		}
		op, err := p.Poll(ctx)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil || p.done || !pollTransient(err) {
				return nil, err
			}
			if failures++; failures > o.MaxTransientFailures {
				return nil, err
			}
			var pe *ProblemError
			if errors.As(err, &pe) {
				wait = pe.RetryAfter
			}
		} else {
			failures = 0
			if p.reported == nil || !sameObservation(p.reported, op) {
				p.reported, quiet = op, 0
				if o.OnChange != nil {
					o.OnChange(*op)
				}
			}
			if p.done {
				return op, nil
			}
			wait = op.RetryAfter
		}
		quiet++
		if wait <= 0 {
			wait = p.c.jitter.backoff(quiet, o.MinDelay, o.MaxDelay)
		}
		if err := p.c.clock.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}
