package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

type recordingBus struct{ details []string }

func (b *recordingBus) Publish(_ context.Context, evs []notify.Event) ([]bool, error) {
	published := make([]bool, len(evs))
	for i, e := range evs {
		b.details = append(b.details, string(e.Detail))
		published[i] = true
	}
	return published, nil
}

// republish wires the notifier's Republish: ids from the arguments or stdin, one line per
// operation, each operation's versions in order; an unknown one is reported and the rest
// still go out.
func TestRepublish(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	facts := []operation.Fact{
		{Version: 1, Kind: operation.KindAccepted, At: at, Source: operation.SourceAdmission,
			Admission: &operation.Admission{Type: "demo.task", Target: "demo:x", Tenant: "acme", Principal: "alice"}},
		{Version: 2, Kind: operation.KindDispatched, At: at.Add(time.Second), Source: operation.SourceDispatcher},
	}
	b := &recordingBus{}
	var gotTable, gotBus string
	open := func(_ context.Context, table, bus string) (*notify.Notifier, error) {
		gotTable, gotBus = table, bus
		return &notify.Notifier{Bus: b, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Facts: func(_ context.Context, id string) ([]operation.Fact, error) {
				if id == "op_gone" {
					return nil, problem.New(problem.NotFound, "No such operation.")
				}
				return facts, nil
			}}, nil
	}
	stdin := strings.NewReader("op_a\n\nop_gone\nop_b\n")
	var out, errOut bytes.Buffer
	code := republish(context.Background(), []string{"-table", "longrun-dev", "-bus", "longrun-dev-events", "-"}, stdin, &out, &errOut, open)
	if code != 1 || gotTable != "longrun-dev" || gotBus != "longrun-dev-events" || !strings.Contains(errOut.String(), "op_gone: not_found: No such operation.") {
		t.Fatalf("%d %q %q %q", code, gotTable, gotBus, errOut.String())
	}
	want := `{"operationId":"op_a","versions":[1,2]}` + "\n" + `{"operationId":"op_gone","versions":[]}` + "\n" + `{"operationId":"op_b","versions":[1,2]}` + "\n"
	if out.String() != want {
		t.Fatalf("printed\n%s", out.String())
	}
	if len(b.details) != 4 {
		t.Fatalf("%d events", len(b.details))
	}
	for i, d := range b.details {
		var detail notify.Detail
		if err := json.Unmarshal([]byte(d), &detail); err != nil || detail.Version != i%2+1 {
			t.Fatalf("event %d: %s", i, d)
		}
	}
}

func TestRepublishNeedsTheTableAndTheBus(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "")
	t.Setenv("LONGRUN_EVENT_BUS", "")
	open := func(context.Context, string, string) (*notify.Notifier, error) { return nil, errors.New("not reached") }
	var out, errOut bytes.Buffer
	if code := republish(context.Background(), []string{"op_a"}, strings.NewReader(""), &out, &errOut, open); code != 2 ||
		!strings.Contains(errOut.String(), "-table and -bus are required") || !strings.Contains(errOut.String(), "version order") {
		t.Fatalf("%d %q", code, errOut.String())
	}
}
