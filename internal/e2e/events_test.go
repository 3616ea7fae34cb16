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
}

var bus = &published{}

func (p *published) collect(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := stack.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(stack.EventsQueueURL),
			MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
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

// of returns the events of one operation, in delivery order.
func (p *published) of(id string) []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []event
	for _, raw := range p.raw {
		var e event
		if json.Unmarshal(raw, &e) == nil && e.Detail.OperationID == id {
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
			t.Errorf("no event for version %d of %s within %v (got %d events)", missing, id, within, len(evs))
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
