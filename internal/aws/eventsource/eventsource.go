// Package eventsource holds the settings of the stream event source mappings in one place:
// the CDK stack configures AWS Lambda with them and the local stack's pollers emulate them,
// so the filter, batching, retries and failure handling are the same in both.
package eventsource

import (
	"time"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
)

// Mapping is one DynamoDB stream → Lambda function event source mapping.
type Mapping struct {
	Function string // the function's logical name (functions/<name>)
	Filter   string // Lambda event filter pattern over the stream record
	// BatchSize and MaxBatchingWindow bound a batch; the window trades latency for fewer
	// invocations.
	BatchSize         int
	MaxBatchingWindow time.Duration
	// MaxRetries bounds retries of a failing batch; after them the batch's description goes
	// to the on-failure destination (the dead-letter queue).
	MaxRetries int
	// BisectOnError splits a failing batch in two, so one poison record does not hold back
	// the others.
	BisectOnError bool
	// ReportBatchItemFailures lets the function name the records that failed, so only they
	// (and what follows them in the shard) are retried.
	ReportBatchItemFailures bool
	// StartingPosition is where a new mapping starts reading.
	StartingPosition string
}

// Dispatcher is the outbox consumer: newly accepted operations only. A record whose
// StartExecution stays throttled is retried MaxRetries times, and then the batch's
// description goes to the dead-letter queue; the operation is lost to no one, since it is due
// for the reconciler at its dispatch lease whatever the stream does (docs/capacity.md,
// "Draining a backlog"). So the retries only decide how much of a short burst the stream
// clears itself and how long a failing batch holds its shard, and 5 keeps both modest.
// Bisection isolates a record that crashes the function; a throttle is reported per record.
func Dispatcher() Mapping {
	return Mapping{
		Function:                "dispatcher",
		Filter:                  dynamo.OutboxFilter,
		BatchSize:               10,
		MaxBatchingWindow:       0,
		MaxRetries:              5,
		BisectOnError:           true,
		ReportBatchItemFailures: true,
		StartingPosition:        "TRIM_HORIZON",
	}
}

// Notifier publishes every committed state change: projection inserts and updates. It
// handles its batch in order and stops at an event the bus keeps refusing, so a small batch
// keeps a failure's retry short.
func Notifier() Mapping {
	return Mapping{
		Function:                "notifier",
		Filter:                  dynamo.ProjectionFilter,
		BatchSize:               25,
		MaxBatchingWindow:       0,
		MaxRetries:              10,
		BisectOnError:           false, // bisecting would publish later versions before earlier ones
		ReportBatchItemFailures: true,
		StartingPosition:        "TRIM_HORIZON",
	}
}

// Mappings lists every stream mapping.
func Mappings() []Mapping { return []Mapping{Dispatcher(), Notifier()} }
