// Package eventbridge is the EventBridge adapter of the notifier's bus.
package eventbridge

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/longrun-dev/longrun/internal/service/notify"
)

// Client is the part of the EventBridge API the adapter uses.
type Client interface {
	PutEvents(ctx context.Context, in *sdk.PutEventsInput, opts ...func(*sdk.Options)) (*sdk.PutEventsOutput, error)
}

// Bus publishes to one event bus.
type Bus struct {
	Client Client
	Name   string
	// Pause waits d before failed entries are sent again; nil waits on a timer that ctx ends.
	Pause func(ctx context.Context, d time.Duration) error
}

// NewBus is the bus called name, reached with cfg.
func NewBus(cfg aws.Config, name string) *Bus {
	return &Bus{Client: sdk.NewFromConfig(cfg), Name: name}
}

// PutEvents' limits per call: ten entries, and 256 KB for the entries' sizes together
// (EntrySize). A call over either fails as a whole, every time it is retried.
const (
	MaxEntries      = 10
	MaxRequestBytes = 256 << 10
)

// EntrySize is an entry's size as EventBridge counts it against MaxRequestBytes (the
// EventBridge user guide, "Calculating PutEvents event entry size"): 14 bytes for Time when
// set, and the UTF-8 bytes of Source, DetailType, Detail and each of Resources. It adds
// EventBusName and TraceHeader, which that page does not count: erring on the large side
// costs at most an extra call, erring on the small side a call refused every time.
func EntrySize(e types.PutEventsRequestEntry) int {
	n := len(aws.ToString(e.Source)) + len(aws.ToString(e.DetailType)) + len(aws.ToString(e.Detail)) +
		len(aws.ToString(e.EventBusName)) + len(aws.ToString(e.TraceHeader))
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// MaxAttempts is how many times Publish sends one entry before it gives up on it: the first
// time, and again after pauses of 100, 200 and 400 ms (backoff). The SDK retries a call that
// failed as a whole, never the entries PutEvents failed in a call that succeeded.
const MaxAttempts = 4

// backoff is the pause before failed entries are sent for attempt+1: 100 ms, doubling.
func backoff(attempt int) time.Duration {
	return 100 * time.Millisecond << min(max(attempt-1, 0), 10)
}

// Publish puts events on the bus in order (notify.Bus), in calls cut by count and by bytes
// (MaxEntries, MaxRequestBytes) and holding at most one event of each operation.
//
// PutEvents may fail some entries of a call and publish the others. Publish then sends only
// the failed ones again, in order, before anything after them, up to MaxAttempts times. As
// a call never carries two events of one operation, an operation's event is never on the bus
// before an earlier one of it, and none is sent twice by Publish. When an entry fails
// MaxAttempts times Publish stops there, sending nothing after it, so the events after it
// that are on the bus are a few of that call's, at most one per operation: the caller's
// retry from the failed one sends each of those again as its operation's latest, not after
// a newer one. An entry too large for any call is an error before anything after it is sent
// (the notifier's details never are: notify.MaxDetailBytes).
func (b *Bus) Publish(ctx context.Context, events []notify.Event) ([]bool, error) {
	entries := make([]types.PutEventsRequestEntry, len(events))
	for i, e := range events {
		entries[i] = types.PutEventsRequestEntry{EventBusName: aws.String(b.Name), Source: aws.String(notify.Source),
			DetailType: aws.String(notify.DetailType), Detail: aws.String(string(e.Detail))}
	}
	published := make([]bool, len(events))
	for next := 0; next < len(events); {
		n := nextCall(events[next:], entries[next:])
		if n == 0 {
			return published, fmt.Errorf("put events: entry %d is %d bytes, over PutEvents' %d", next, EntrySize(entries[next]), MaxRequestBytes)
		}
		call := make([]int, n)
		for i := range call {
			call[i] = next + i
		}
		next += n
		for attempt := 1; ; attempt++ {
			failed, err := b.put(ctx, entries, call, published)
			if err != nil {
				// The call failed as a whole, after the SDK's own retries of what is worth
				// retrying: nothing of it is on the bus.
				return published, fmt.Errorf("put events: %w", err)
			}
			if len(failed) == 0 {
				break
			}
			if attempt == MaxAttempts {
				f := failed[0]
				return published, fmt.Errorf("put events: entry %d failed %d times: %s: %s", f.index, attempt, f.code, f.message)
			}
			if err := b.pause(ctx, backoff(attempt)); err != nil {
				return published, fmt.Errorf("put events: %w", err)
			}
			call = call[:0]
			for _, f := range failed {
				call = append(call, f.index)
			}
		}
	}
	return published, nil
}

// nextCall is how many of events (entries, the same as PutEvents entries) go in the next
// call: from the first, in order, while the call has room by count and by bytes and holds
// no second event of one operation. The call is always the next events in order, never a
// pick from further on: an event picked past an unpublished one would be on the bus in an
// earlier call, and the caller's retry from the unpublished one would send it again after a
// newer event of its operation.
func nextCall(events []notify.Event, entries []types.PutEventsRequestEntry) int {
	ops := make(map[string]bool, MaxEntries)
	n, size := 0, 0
	for n < len(events) && n < MaxEntries && !ops[events[n].OperationID] {
		s := EntrySize(entries[n])
		if size+s > MaxRequestBytes {
			break
		}
		ops[events[n].OperationID] = true
		n, size = n+1, size+s
	}
	return n
}

// failure is an entry PutEvents failed: its index among Publish's events, and why.
type failure struct {
	index         int
	code, message string
}

// put sends the entries at the indexes call in one PutEvents call, marks those it
// published and returns those that failed, in order. An error is the call's own: none of
// its entries is known to be on the bus.
func (b *Bus) put(ctx context.Context, entries []types.PutEventsRequestEntry, call []int, published []bool) ([]failure, error) {
	in := &sdk.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(call))}
	for i, j := range call {
		in.Entries[i] = entries[j]
	}
	out, err := b.Client.PutEvents(ctx, in)
	if err != nil {
		return nil, err
	}
	if len(out.Entries) != len(call) {
		// EventBridge answers every entry, in order; without that, no entry is known to be
		// on the bus.
		return nil, fmt.Errorf("%d results for %d entries", len(out.Entries), len(call))
	}
	var failed []failure
	for i, e := range out.Entries {
		if e.ErrorCode == nil {
			published[call[i]] = true
			continue
		}
		failed = append(failed, failure{index: call[i], code: aws.ToString(e.ErrorCode), message: aws.ToString(e.ErrorMessage)})
	}
	return failed, nil
}

func (b *Bus) pause(ctx context.Context, d time.Duration) error {
	if b.Pause != nil {
		return b.Pause(ctx, d)
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
