package worker

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// stepLogger writes the one line [Start] logs per step, in the field names of Powertools
// for AWS Lambda and of longrun's own functions (level, message, timestamp, service,
// function_request_id, correlation_id, operation_id), so that one Logs Insights query
// follows an operation through longrun and its workers. It never logs the input, the state
// or the result.
type stepLogger struct {
	log     *slog.Logger
	service string
}

func newStepLogger(w io.Writer) stepLogger {
	service := os.Getenv("POWERTOOLS_SERVICE_NAME")
	if service == "" {
		service = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		switch {
		case len(groups) > 0:
		case a.Key == slog.TimeKey:
			return slog.String("timestamp", a.Value.Time().UTC().Format("2006-01-02T15:04:05.000Z"))
		case a.Key == slog.MessageKey:
			a.Key = "message"
		}
		return a
	}})
	return stepLogger{log: slog.New(h), service: service}
}

// step logs how step of req ended: its report's status, or the error that failed it.
func (l stepLogger) step(ctx context.Context, req Request, rep Report, took time.Duration, err error) {
	attrs := []slog.Attr{slog.String("service", l.service)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("function_request_id", lc.AwsRequestID))
	}
	if req.CorrelationID != "" {
		attrs = append(attrs, slog.String("correlation_id", req.CorrelationID))
	}
	attrs = append(attrs, slog.String("operation_id", req.OperationID), slog.Int("step", req.Step),
		slog.Int64("duration_ms", took.Milliseconds()))
	level := slog.LevelInfo
	if err != nil {
		// The error's text may hold what the step worked on: its kind only.
		level = slog.LevelError
		attrs = append(attrs, slog.String("status", "error"))
	} else {
		attrs = append(attrs, slog.String("status", string(rep.status)))
		if rep.problem != nil {
			attrs = append(attrs, slog.String("code", rep.problem.Code))
		}
	}
	l.log.LogAttrs(ctx, level, "step", attrs...)
}
