package linearize_test

import (
	"fmt"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

// A load driver wraps each request in Begin and End, then checks the history. Here the
// last read began after a cancel had been answered, and still saw the state before it.
func Example() {
	var now int64
	rec := linearize.NewRecorder(func() int64 { now += int64(time.Millisecond); return now }) // nil: the monotonic clock
	do := func(in linearize.Input, out linearize.Output) {
		call := rec.Begin(in)
		// … send the request and read the answer (Status 0 when none came) …
		call.End(out)
	}
	do(linearize.Input{Kind: linearize.Create, Key: "nightly-export"},
		linearize.Output{Status: 202, OperationID: "op_1"})
	do(linearize.Input{Kind: linearize.Get, OperationID: "op_1"},
		linearize.Output{Status: 200, State: operation.Running, Version: 3})
	do(linearize.Input{Kind: linearize.Cancel, OperationID: "op_1", IfMatch: 3},
		linearize.Output{Status: 202, State: operation.Cancelling, Version: 4})
	do(linearize.Input{Kind: linearize.Get, OperationID: "op_1"},
		linearize.Output{Status: 200, State: operation.Running, Version: 4})

	res, err := linearize.Check(rec.History(), time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println("linearizable:", res.Linearizable)
	for _, v := range res.Violations {
		fmt.Println(v)
	}
	// A failed check can be looked at in a browser: res.VisualizeFile("history.html").

	// Output:
	// linearizable: false
	// keys [nightly-export], operations [op_1]: 3 of 4 calls linearized; stuck at get op_1 → 200 running v4 (at +6ms)
}
