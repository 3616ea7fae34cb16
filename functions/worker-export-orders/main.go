// Command worker-export-orders is export.orders' worker: in one step it generates the
// caller's orders for the range as CSV (deterministically, so equal ranges give equal
// digests) and reports the row count, the SHA-256 and the size of the file. It speaks the
// step protocol through the public worker package.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/worker"
)

// input is export.orders' input: a range of calendar dates, both included.
type input struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func exportOrders(_ context.Context, _ worker.Step, in input) (worker.Report, error) {
	csv, rows, err := OrdersCSV(in.From, in.To)
	if err != nil { // nothing was generated
		return worker.Report{}, &worker.Problem{Code: worker.CodeInvalidInput, Title: "The operation's input is not what the worker reads.", Detail: err.Error()}
	}
	sum := sha256.Sum256(csv)
	return worker.Succeed(map[string]any{"rowCount": rows, "sha256": hex.EncodeToString(sum[:]), "bytes": len(csv)}), nil
}

// OrdersCSV renders the demo order book for [from, to] (dates written YYYY-MM-DD): 1–7
// orders a day, fixed amounts. It returns the file and its number of rows.
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

func main() { worker.Start(exportOrders) }
