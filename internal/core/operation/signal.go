package operation

import (
	"encoding/json"
	"time"
)

// Signal is what a signaled fact records: the signal's name and data (compact JSON), and
// the idempotency key it was sent with and the fingerprint of what was sent, by which a
// retried send is answered as the first was (docs/idempotency.md).
type Signal struct {
	Name        string          `json:"name"`
	Data        json.RawMessage `json:"data"`
	Key         string          `json:"key"`
	Fingerprint string          `json:"fingerprint"`
}

// Received is a signal as the fold holds it: with the version of its fact, when it came,
// and who sent it (the source, and the principal for a client or an operator).
type Received struct {
	Signal
	Version int
	At      time.Time
	Source  Source
	Actor   string
}

// Awaiting is a wait for a signal: the signal, since when and until when, the step that
// asked for it, and the state that step carried, for the step after it. Only Signal, Since
// and Until are public (AwaitingView).
type Awaiting struct {
	Signal string          `json:"signal"`
	Since  time.Time       `json:"since"`
	Until  time.Time       `json:"until"`
	Step   int             `json:"step"`
	State  json.RawMessage `json:"state,omitempty"`
}

// AwaitingView is the representation's awaiting (api/openapi.yaml, Awaiting).
type AwaitingView struct {
	Signal string `json:"signal"`
	Since  string `json:"since"`
	Until  string `json:"until"`
}

// Delivery is which signals a step is given: Signals[From:Through] of the operation, and,
// for the step after a wait, the signal it waited for and whether the wait timed out. A
// step run again (the same step number) is given the same From.
type Delivery struct {
	Step     int    `json:"step"`
	From     int    `json:"from"`
	Through  int    `json:"through"`
	Awaited  string `json:"awaited,omitempty"`
	TimedOut bool   `json:"timedOut,omitempty"`
}

// Awaits says whether the work waits for a signal: a step asked to, and nothing has run
// since. No step is then in flight and no execution runs.
func (o Operation) Awaits() bool {
	return o.Awaiting != nil && (o.State == Dispatched || o.State == Running)
}

// Undelivered is the index in Signals of the first signal step n has not been given by an
// earlier step: a step run again starts where it started the first time.
func (o Operation) Undelivered(n int) int {
	switch d := o.Delivery; {
	case d == nil:
		return 0
	case d.Step >= n:
		return min(d.From, len(o.Signals))
	default:
		return min(d.Through, len(o.Signals))
	}
}

// Arrived says whether a signal called name is among those step n would be given.
func (o Operation) Arrived(name string, n int) bool {
	for _, s := range o.Signals[o.Undelivered(n):] {
		if s.Name == name {
			return true
		}
	}
	return false
}

// AwaitAnswered says whether the signal the work waits for has arrived: the work should go
// on at once.
func (o Operation) AwaitAnswered() bool {
	return o.Awaits() && o.Arrived(o.Awaiting.Signal, o.Awaiting.Step+1)
}

// SignalKeyed is the signal received with idempotency key key, if any.
func (o Operation) SignalKeyed(key string) (Received, bool) {
	for _, s := range o.Signals {
		if s.Key == key {
			return s, true
		}
	}
	return Received{}, false
}
