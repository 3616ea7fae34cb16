package recorder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/lambdalog"
	"github.com/longrun-dev/longrun/internal/core/admission"
	"github.com/longrun-dev/longrun/internal/service/recorder"
)

// The worker's step request and the recorder's lines carry the operation's correlation id.
func TestCorrelationIDReachesTheWorkerAndTheLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var out bytes.Buffer
	f.rec.Log = slog.New(lambdalog.New(&out, "longrun-recorder", slog.LevelInfo))
	adm, err := f.admit.Admit(context.Background(), admission.Request{Scope: admission.Scope{Tenant: "acme", Principal: "alice"},
		Key: "k-corr", MediaType: "application/json", Body: []byte(`{"type":"test.poll","input":{"name":"corr"}}`),
		CorrelationID: "corr-recorder"})
	if err != nil {
		t.Fatal(err)
	}
	id := adm.Record.OperationID
	d := f.handle(recorder.Input{OperationID: id})
	if d.Request == nil || d.Request.CorrelationID != "corr-recorder" {
		t.Fatalf("step request %+v", d.Request)
	}
	if raw, _ := json.Marshal(d.Request); !strings.Contains(string(raw), `"correlationId":"corr-recorder"`) {
		t.Errorf("the request as sent: %s", raw)
	}
	f.handle(after(d, `{"status":"succeeded","result":{}}`))
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &line); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if line["message"] != "recorded" || line["operation_id"] != id || line["correlation_id"] != "corr-recorder" || line["outcome"] != "succeeded" {
		t.Errorf("line %v", line)
	}
}
