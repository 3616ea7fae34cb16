package linearize_test

import (
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/testkit/linearize"
)

func TestGeneratedHistoriesAreLinearizable(t *testing.T) {
	for seed := range uint64(20) {
		h := simulate(seed, 50, 40)
		if res := check(t, h); !res.Linearizable {
			t.Fatalf("seed %d: a simulated history was refused: %v", seed, res.Violations)
		}
	}
	h := simulate(100, 500, 40)
	res := check(t, h)
	if !res.Linearizable || res.Calls != 20000 || res.Partitions != 500 {
		t.Fatalf("got %d calls in %d partitions, linearizable %v: %v", res.Calls, res.Partitions, res.Linearizable, res.Violations)
	}
}

// One read that goes back, among 20,000 calls, is found, and only its operation is named.
func TestOneStaleReadAmongManyIsFoundAndNamed(t *testing.T) {
	h := simulate(7, 500, 40)
	for i, a := range h {
		if a.Input.Kind != linearize.Get || a.Output.Status != 200 || a.Output.Version < 2 {
			continue
		}
		for j := i + 1; j < len(h); j++ {
			b := h[j]
			if b.Input.Kind == linearize.Get && b.Input.OperationID == a.Input.OperationID && b.Call > a.Return && b.Output.Status == 200 {
				h[j].Output = read(a.Output.State, a.Output.Version-1)
				mustViolate(t, h, a.Input.OperationID)
				return
			}
		}
	}
	t.Fatal("no read to doctor")
}

func BenchmarkCheck(b *testing.B) {
	h := simulate(100, 500, 40)
	for b.Loop() {
		res, err := linearize.Check(h, time.Minute)
		if err != nil || !res.Linearizable {
			b.Fatalf("%v %v", err, res.Violations)
		}
	}
	b.ReportMetric(float64(len(h)), "calls")
}
