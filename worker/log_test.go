package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// One line per step in the field names longrun's functions use, without the input, the
// state or the result.
func TestStartLogsOneLinePerStep(t *testing.T) {
	t.Setenv("POWERTOOLS_SERVICE_NAME", "")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "provision-dev-worker")
	var buf bytes.Buffer
	log := newStepLogger(&buf)
	type in struct{ Secret string }
	fn := func(_ context.Context, s Step, i in) (Report, error) {
		if s.Number == 2 {
			return Report{}, errors.New("boom " + i.Secret)
		}
		return Continue(map[string]string{"cursor": "state-marker"}), nil
	}
	h := handler(fn, &log)
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	for n := 1; n <= 2; n++ {
		req, _ := json.Marshal(Request{Protocol: Protocol, OperationID: "op_1", Type: "t", Version: 1, Input: json.RawMessage(`{"Secret":"input-marker"}`),
			Step: n, MaxSteps: 5, Deadline: time.Now().Add(time.Hour), StepTimeoutSeconds: 60, CorrelationID: "corr-1"})
		_, _ = h(ctx, req)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(buf.String(), "marker") {
		t.Fatalf("lines:\n%s", buf.String())
	}
	for i, want := range []struct{ level, status string }{{"INFO", "continue"}, {"ERROR", "error"}} {
		var l map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatal(err)
		}
		if l["level"] != want.level || l["message"] != "step" || l["service"] != "provision-dev-worker" || l["function_request_id"] != "req-1" ||
			l["correlation_id"] != "corr-1" || l["operation_id"] != "op_1" || l["step"] != float64(i+1) || l["status"] != want.status ||
			l["timestamp"] == nil || l["time"] != nil || l["msg"] != nil {
			t.Errorf("line %d: %v", i+1, l)
		}
	}
}
