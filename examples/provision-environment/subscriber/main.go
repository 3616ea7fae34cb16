// Command subscriber is an EventBridge target for longrun's "Operation State Changed"
// events of provision.environment (the CDK app's rule selects them): it tells the team
// when an environment is ready or could not be made. Here it writes a JSON log line; a real
// one would post to a chat channel or open a ticket.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// Detail is the part of the event's detail this subscriber reads
// (longrun's events/schemas/operation-state-changed.json has all of it).
type Detail struct {
	OperationID string `json:"operationId"`
	Type        string `json:"type"`
	Target      string `json:"target"`
	State       string `json:"state"`
	Version     int    `json:"version"`
	Result      *struct {
		URL string `json:"url"`
	} `json:"result"`
	Problem *struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"problem"`
	ResultOmitted bool `json:"resultOmitted"`
}

// Notice is what the subscriber says about one event; ok is false for events it ignores.
// Delivery is at least once: a notice may be said twice, and (operationId, version) tells.
func Notice(ev events.EventBridgeEvent) (msg string, attrs []any, ok bool, err error) {
	if ev.Source != "longrun" || ev.DetailType != "Operation State Changed" {
		return "", nil, false, nil
	}
	var d Detail
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return "", nil, false, fmt.Errorf("subscriber: the detail: %w", err)
	}
	if d.Type != "provision.environment" {
		return "", nil, false, nil
	}
	attrs = []any{"operation_id", d.OperationID, "version", d.Version, "target", d.Target}
	switch d.State {
	case "succeeded":
		if d.Result == nil {
			return "environment ready (GET the operation for its URL)", attrs, true, nil
		}
		return "environment ready", append(attrs, "url", d.Result.URL), true, nil
	case "failed", "outcome_unknown":
		code := ""
		if d.Problem != nil {
			code = d.Problem.Code
		}
		return "environment not made", append(attrs, "state", d.State, "code", code), true, nil
	}
	return "", nil, false, nil // accepted, running, progress: nothing to say
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		msg, attrs, ok, err := Notice(ev)
		if err != nil || !ok {
			return err
		}
		log.InfoContext(ctx, msg, attrs...)
		return nil
	})
}
