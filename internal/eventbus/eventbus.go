// Package eventbus is the EventBridge adapter of the notifier's bus.
package eventbus

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/longrun-dev/longrun/internal/notify"
)

// Client is the part of the EventBridge API the adapter uses.
type Client interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Bus publishes to one event bus.
type Bus struct {
	Client Client
	Name   string
}

// maxEntries is PutEvents' limit per call.
const maxEntries = 10

// Publish sends details in order, up to ten per call, and stops at the first entry that
// failed, so what follows it is retried after it.
func (b *Bus) Publish(ctx context.Context, details [][]byte) (int, error) {
	published := 0
	for published < len(details) {
		chunk := details[published:min(len(details), published+maxEntries)]
		entries := make([]types.PutEventsRequestEntry, len(chunk))
		for i, d := range chunk {
			entries[i] = types.PutEventsRequestEntry{EventBusName: aws.String(b.Name), Source: aws.String(notify.Source),
				DetailType: aws.String(notify.DetailType), Detail: aws.String(string(d))}
		}
		out, err := b.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		if err != nil {
			return published, fmt.Errorf("put events: %w", err)
		}
		for i, e := range out.Entries {
			if e.ErrorCode != nil {
				return published + i, fmt.Errorf("put events: entry %d: %s: %s", i, aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
			}
		}
		published += len(chunk)
	}
	return published, nil
}
