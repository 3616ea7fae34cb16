package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/optype"
)

// ErrResultLost is how demo.task's "unknown" outcome fails its last step: after the effect.
var ErrResultLost = errors.New("the connection dropped after the effect; the result is lost")

// DemoTask is demo.task's work: `steps` steps of `sleepMs` each, then the asked-for outcome.
type DemoTask struct{}

func (DemoTask) Step(ctx context.Context, op operation.Operation, step int) (Report, error) {
	in, err := optype.DecodeDemoTask(op.Input)
	if err != nil {
		return Report{}, err
	}
	select {
	case <-ctx.Done():
		return Report{}, ctx.Err()
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	}
	if step+1 < in.Steps {
		return Report{Step: step + 1}, nil
	}
	rep := Report{Done: true, Step: step + 1}
	switch in.Outcome {
	case "fail":
		rep.Outcome = operation.KindFailed
		rep.Problem = operation.NewProblem("demo_failed", "Demo task failed", "The demo task was asked to fail.")
	case "unknown":
		// The effect happened (the steps ran) and then the response is lost, as when a
		// worker dies after acting: the invocation fails and nobody knows the outcome.
		return Report{}, ErrResultLost
	default:
		rep.Outcome = operation.KindSucceeded
		rep.Result, _ = json.Marshal(map[string]any{"target": in.Target, "steps": in.Steps})
	}
	return rep, nil
}

// ExportOrders is export.orders' work: it generates the caller's orders for the range as
// CSV (deterministically, so equal ranges give equal digests) and reports the row count and
// SHA-256 of the file.
type ExportOrders struct{}

func (ExportOrders) Step(_ context.Context, op operation.Operation, _ int) (Report, error) {
	var in struct{ From, To string }
	if err := json.Unmarshal(op.Input, &in); err != nil {
		return Report{}, fmt.Errorf("decode export.orders input: %w", err)
	}
	csv, rows, err := OrdersCSV(in.From, in.To)
	if err != nil {
		return Report{}, err
	}
	sum := sha256.Sum256(csv)
	result, _ := json.Marshal(map[string]any{"rowCount": rows, "sha256": hex.EncodeToString(sum[:]), "bytes": len(csv)})
	return Report{Done: true, Step: 1, Outcome: operation.KindSucceeded, Result: result}, nil
}

// OrdersCSV renders the demo order book for [from, to]: 1–7 orders a day, fixed amounts.
func OrdersCSV(from, to string) ([]byte, int, error) {
	start, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return nil, 0, err
	}
	end, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return nil, 0, err
	}
	var b strings.Builder
	b.WriteString("order_id,date,amount_cents\n")
	rows := 0
	for d := start; !d.After(end); d = d.AddDate(0, 0, 1) {
		for n := range 1 + d.YearDay()%7 {
			fmt.Fprintf(&b, "ord-%s-%d,%s,%d\n", d.Format("20060102"), n, d.Format(time.DateOnly), 1000+(d.YearDay()*37+n*101)%9000)
			rows++
		}
	}
	return []byte(b.String()), rows, nil
}
