package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
	"github.com/longrun-dev/longrun/internal/service/dispatch"
	"github.com/longrun-dev/longrun/internal/testkit/fakeexecutor"
	"github.com/longrun-dev/longrun/internal/testkit/memstore"
)

// What Dispatch comes to when another writer appends between the start of the execution
// and the dispatched fact, on the in-memory store (no Java): the append loses, and the
// decision is made again on what that writer wrote.
func TestDecidesAgainAfterARaceWithTheStart(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		between func(t *testing.T, s *memstore.Store, op operation.Operation)
		history string
		stopped bool
	}{
		{"nobody: dispatched", nil, "[accepted dispatched]", false},
		{"a cancel: canceled, and the execution stopped", func(t *testing.T, s *memstore.Store, op operation.Operation) {
			if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindCancelRequested, At: t0, Source: operation.SourceClient}); err != nil {
				t.Errorf("cancel: %v", err)
			}
		}, "[accepted cancel_requested canceled]", true},
		{"the worker's start: nothing more, nothing stopped", func(t *testing.T, s *memstore.Store, op operation.Operation) {
			if _, err := s.Append(ctx, op, operation.Fact{Kind: operation.KindStarted, At: t0, Source: operation.SourceExecutor}); err != nil {
				t.Errorf("started: %v", err)
			}
		}, "[accepted started]", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New()
			id := s.Accept(t, "", t0)
			exec := &fakeexecutor.Executor{}
			if c.between != nil {
				exec.AfterStart = func(string) error {
					s.BeforeNextAppend(func(op operation.Operation) { c.between(t, s, op) })
					return nil
				}
			}
			d, err := dispatch.New(dispatch.Dispatcher{Store: s, Executor: exec, Registry: optype.Builtin(),
				DeadLetters: dropped{}, Now: func() time.Time { return t0.Add(time.Second) }, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
				Accepted: func(events.DynamoDBEventRecord) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Dispatch(ctx, id); err != nil {
				t.Fatal(err)
			}
			history, err := s.Facts(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []operation.Kind
			for _, f := range history {
				kinds = append(kinds, f.Kind)
			}
			if fmt.Sprint(kinds) != c.history {
				t.Fatalf("history %v; want %s", kinds, c.history)
			}
			ex := exec.Executions()[id]
			if exec.Starts() != 1 || ex.Stopped != c.stopped {
				t.Fatalf("%d starts, stopped %v; want one start, stopped %v", exec.Starts(), ex.Stopped, c.stopped)
			}
		})
	}
}

type dropped struct{}

func (dropped) Send(context.Context, dispatch.DeadLetter) error { return nil }
