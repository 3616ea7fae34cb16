// Package eventbridge is the EventBridge adapter of the notifier's bus.
package eventbridge

import (
	"context"
	"fmt"

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

// Publish sends details in order, in calls cut by count and by bytes (MaxEntries,
// MaxRequestBytes), and stops at the first entry that failed, so what follows it is retried
// after it. An entry too large for any call is an error before anything after it is sent
// (the notifier's details never are: notify.MaxDetailBytes).
func (b *Bus) Publish(ctx context.Context, details [][]byte) (int, error) {
	entries := make([]types.PutEventsRequestEntry, len(details))
	for i, d := range details {
		entries[i] = types.PutEventsRequestEntry{EventBusName: aws.String(b.Name), Source: aws.String(notify.Source),
			DetailType: aws.String(notify.DetailType), Detail: aws.String(string(d))}
	}
	published := 0
	for published < len(entries) {
		n, size := 0, 0
		for published+n < len(entries) && n < MaxEntries {
			s := EntrySize(entries[published+n])
			if size+s > MaxRequestBytes {
				break
			}
			n, size = n+1, size+s
		}
		if n == 0 {
			return published, fmt.Errorf("put events: entry %d is %d bytes, over PutEvents' %d", published, EntrySize(entries[published]), MaxRequestBytes)
		}
		out, err := b.Client.PutEvents(ctx, &sdk.PutEventsInput{Entries: entries[published : published+n]})
		if err != nil {
			return published, fmt.Errorf("put events: %w", err)
		}
		for i, e := range out.Entries {
			if e.ErrorCode != nil {
				return published + i, fmt.Errorf("put events: entry %d: %s: %s", published+i, aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
			}
		}
		published += n
	}
	return published, nil
}
