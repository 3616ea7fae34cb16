// Package sqs is the SQS adapter for records no consumer can process: each becomes
// one message naming the operation and the reason, for an operator to inspect and redrive.
package sqs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/longrun-dev/longrun/internal/service/dispatch"
)

// Client is the part of the SQS API the adapter uses.
type Client interface {
	SendMessage(ctx context.Context, in *sdk.SendMessageInput, opts ...func(*sdk.Options)) (*sdk.SendMessageOutput, error)
}

// Queue sends dead letters to one SQS queue.
type Queue struct {
	Client Client
	URL    string
}

// NewDeadLetters is the dead-letter queue at url, reached with cfg.
func NewDeadLetters(cfg aws.Config, url string) *Queue {
	return &Queue{Client: sdk.NewFromConfig(cfg), URL: url}
}

// Send enqueues one dead letter.
func (q *Queue) Send(ctx context.Context, letter dispatch.DeadLetter) error {
	body, err := json.Marshal(letter)
	if err != nil {
		return err
	}
	if _, err := q.Client.SendMessage(ctx, &sdk.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("send dead letter: %w", err)
	}
	return nil
}
