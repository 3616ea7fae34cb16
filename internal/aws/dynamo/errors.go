package dynamo

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/longrun-dev/longrun/internal/core/problem"
)

// throttling reports DynamoDB error codes that mean "busy, nothing was done: retry later".
func throttling(code string) bool {
	switch code {
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException",
		"InternalServerError", "ServiceUnavailable", "TransactionInProgressException":
		return true
	}
	return false
}

// classify turns an SDK error into a problem: throttling and transport failures are 503
// (the client may retry with the same key: admission is idempotent), anything else is a
// bug or misconfiguration and is 500 with no detail.
func classify(err error) error {
	var apiErr smithy.APIError
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr) && throttling(apiErr.ErrorCode()),
		errors.As(err, &sendErr), errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded):
		return problem.Wrap(problem.Unavailable, err, "A dependency is unavailable; retry with the same Idempotency-Key.").
			WithRetryAfter(time.Second)
	default:
		return problem.Wrap(problem.Internal, err, "An internal error occurred.")
	}
}
