package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/longrun-dev/longrun/events"
)

// published collects every event the bus delivered to the stack's events queue, so tests
// can look up their operations' events without taking each other's messages.
type published struct {
	mu  sync.Mutex
	raw [][]byte
	// failed counts receives that failed, for the message of a test that waited in vain.
	failed int
}

var bus = &published{}

func (p *published) collect(ctx context.Context) {
	for ctx.Err() == nil {
		// A receive whose answer is lost on the way (a loaded machine has cut a large body
		// short) leaves its messages in flight until their visibility timeout: 5 s, not the
		// queue's 30, so they come again well within a test's wait. A message received
		// twice is kept once (of).
		out, err := stack.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(stack.EventsQueueURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 5})
		if err != nil {
			p.mu.Lock()
			p.failed++
			p.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for _, m := range out.Messages {
			p.mu.Lock()
			p.raw = append(p.raw, []byte(aws.ToString(m.Body)))
			p.mu.Unlock()
			_, _ = stack.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(stack.EventsQueueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

type event struct {
	raw    []byte
	Detail struct {
		OperationID   string  `json:"operationId"`
		State         string  `json:"state"`
		PreviousState *string `json:"previousState"`
		Version       int     `json:"version"`
		CorrelationID string  `json:"correlationId"`
		Progress      *struct {
			CompletedSteps int `json:"completedSteps"`
			TotalSteps     int `json:"totalSteps"`
		} `json:"progress"`
	} `json:"detail"`
}

// of returns the events of one operation, in delivery order, each once.
func (p *published) of(id string) []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []event
	seen := map[string]bool{}
	for _, raw := range p.raw {
		var e event
		if json.Unmarshal(raw, &e) == nil && e.Detail.OperationID == id && !seen[string(raw)] {
			seen[string(raw)] = true
			e.raw = raw
			out = append(out, e)
		}
	}
	return out
}

// waitVersions waits until events of every version from 1 to final for id have arrived
// (delivery is asynchronous and may reorder), and returns what arrived.
func (p *published) waitVersions(t *testing.T, id string, final int, within time.Duration) []event {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		evs := p.of(id)
		seen := map[int]bool{}
		for _, e := range evs {
			seen[e.Detail.Version] = true
		}
		missing := 0
		for v := 1; v <= final; v++ {
			if !seen[v] {
				missing = v
				break
			}
		}
		if missing == 0 {
			return evs
		}
		if time.Now().After(deadline) {
			p.mu.Lock()
			failed := p.failed
			p.mu.Unlock()
			t.Errorf("no event for version %d of %s within %v (got %d events; %d receives failed)", missing, id, within, len(evs), failed)
			return evs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkEvents asserts what subscribers are promised. Every delivered event validates against
// the published schema and every version from 1 to final is delivered at least once. The
// notifier published them in version order; delivery through EventBridge may reorder (on AWS
// too), which is why subscribers deduplicate and order by version.
func checkEvents(t *testing.T, id string, final int, finalState string) {
	t.Helper()
	if stack.EventsQueueURL == "" {
		return // a deployed stack without a queue on its bus: nothing to observe here
	}
	v, err := events.NewValidator(events.StateChangedSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range bus.waitVersions(t, id, final, 20*time.Second) {
		if err := v.Validate(e.raw); err != nil {
			t.Errorf("event does not match its schema: %v\n%s", err, e.raw)
		}
		if e.Detail.Version == final && e.Detail.State != finalState {
			t.Errorf("version %d says %s, want %s", final, e.Detail.State, finalState)
		}
	}
	if stack.local == nil {
		return // the publish-order tap is the local edge's
	}
	last, first := 0, map[int]bool{}
	for _, raw := range stack.Published() {
		var d struct {
			OperationID string `json:"operationId"`
			Version     int    `json:"version"`
		}
		if json.Unmarshal(raw, &d) != nil || d.OperationID != id || first[d.Version] {
			continue // a repeat (at least once) says nothing about order
		}
		first[d.Version] = true
		if d.Version < last {
			t.Errorf("published version %d after version %d", d.Version, last)
		}
		last = max(last, d.Version)
	}
	if last != final {
		t.Errorf("published up to version %d, want %d", last, final)
	}
}
