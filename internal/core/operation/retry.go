package operation

import (
	"encoding/json"
	"time"
)

// Retry is a step run again on an operator's word after its outcome was unknown: which step,
// the how-manieth time it runs (2 for the first retry), and the state it is given, the one
// the attempt whose outcome was unknown had (docs/lifecycle.md, "Retrying an unknown step").
// The step keeps its identity, (operation id, step), so a worker that deduplicates on it
// stays safe; Attempt tells the worker which run this is.
type Retry struct {
	Step    int             `json:"step"`
	Attempt int             `json:"attempt,omitempty"`
	State   json.RawMessage `json:"state,omitempty"`
}

// RetryView is the public part of a retry (api/openapi.yaml, Retry): never the state.
type RetryView struct {
	Step    int `json:"step"`
	Attempt int `json:"attempt"`
}

// Retried is an operation's latest retry as the fold keeps it: the retry, and when and why
// the operator asked for it.
type Retried struct {
	Retry
	At     time.Time
	Reason string
}

// RetriedView is the representation's and the events' retried (api/openapi.yaml,
// Retried): the latest retry an operator asked for, once there is one. Not who: that is in
// the history, for operators.
type RetriedView struct {
	Step    int    `json:"step"`
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
	Reason  string `json:"reason"`
}

// Attempt is how many times step n has been asked to run, counting the one about to: 1
// unless an operator retried it. Steps only move forward after a retry, so only the latest
// retry can be of step n or later.
func (o Operation) Attempt(n int) int {
	if r := o.Retried; r != nil && r.Step == n {
		return r.Attempt
	}
	return 1
}

// Superseded says whether the end of attempt attempt of step n is stale: an operator had
// that step, or a later one, run again after it, so the attempt was given up on and only
// the new one's end counts. attempt 0 is a request from before attempts were counted (1).
func (o Operation) Superseded(n, attempt int) bool {
	r := o.Retried
	return r != nil && (n < r.Step || n == r.Step && max(attempt, 1) < r.Attempt)
}
