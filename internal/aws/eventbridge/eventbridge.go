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
		out, err := b.Client.PutEvents(ctx, &sdk.PutEventsInput{Entries: entries})
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
