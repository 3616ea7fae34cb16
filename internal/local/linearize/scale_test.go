package linearize_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/local/linearize"
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

// Dropping the calls whose answers others imply never changes the verdict: simulated
// histories, most with an answer or two doctored, get the same one with and without.
func TestTheReductionKeepsTheVerdict(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	states := operation.States()
	refused := 0
	for seed := range uint64(300) {
		h := simulate(seed, 8, 100)
		for range rng.IntN(3) {
			i := rng.IntN(len(h))
			if h[i].Input.Kind != linearize.Get || h[i].Output.Status != 200 {
				continue
			}
			if j := rng.IntN(len(h)); rng.IntN(2) == 0 && h[j].Input == h[i].Input && h[j].Output.Status == 200 {
				h[i].Output = h[j].Output // another read's answer: stale, or early, or fine
			} else {
				h[i].Output = read(states[rng.IntN(len(states))], max(1, h[i].Output.Version+rng.IntN(3)-1))
			}
		}
		reduced, err := linearize.Check(h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := linearize.CheckUnreduced(h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if reduced.TimedOut || whole.TimedOut || reduced.Linearizable != whole.Linearizable || reduced.Checked >= whole.Checked {
			t.Fatalf("seed %d: reduced %v (%d calls: %v), whole %v (%d calls: %v)", seed, reduced.Linearizable,
				reduced.Checked, reduced.Violations, whole.Linearizable, whole.Checked, whole.Violations)
		}
		if !reduced.Linearizable {
			refused++
		}
	}
	if refused < 100 {
		t.Fatalf("only %d of 300 histories were refused: the doctoring proves too little", refused)
	}
}

// Of the reads with one answer, the one that returned first and the one called last are
// what bind the rest; each case's violation is visible through that read alone.
func TestTheReductionKeepsTheReadsThatBind(t *testing.T) {
	made := at(-10, -5, create("k"), created("op_1"))
	t.Run("the earliest return", func(t *testing.T) {
		mustViolate(t, []linearize.Entry{made,
			at(0, 100, get("op_1"), read(running, 3)),  // called first
			at(10, 20, get("op_1"), read(running, 3)),  // returned first
			at(50, 100, get("op_1"), read(running, 3)), // called last
			at(25, 30, get("op_1"), read(dispatched, 2)),
		}, "op_1")
	})
	t.Run("the latest call", func(t *testing.T) {
		mustViolate(t, []linearize.Entry{made,
			at(0, 50, get("op_1"), read(running, 3)),   // returned first
			at(10, 200, get("op_1"), read(running, 3)), // returned last
			at(80, 85, get("op_1"), read(running, 3)),  // called last
			at(60, 70, get("op_1"), read(running, 4)),
		}, "op_1")
	})
}

// Dozens of overlapping reads of one operation are a few for porcupine, and a stale read
// among them is still found.
func TestDensePollingIsCheckedFast(t *testing.T) {
	h := []linearize.Entry{at(0, 10, create("k"), created("op_1"))}
	for i := range int64(40) {
		h = append(h, at(20+i, 100+i, get("op_1"), read(running, 3)))
		h = append(h, at(200+i, 300+i, get("op_1"), read(running, 4)))
	}
	res := check(t, h)
	if !res.Linearizable || res.Calls != 81 || res.Checked != 5 {
		t.Fatalf("got %+v", res)
	}
	// Called after every read of version 4 had returned, and still sees 3.
	stale := at(350, 360, get("op_1"), read(running, 3))
	if v := mustViolate(t, with(h, stale), "op_1"); v.Calls != 5 {
		t.Fatalf("got %v", v)
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, size := range []struct {
		name       string
		ops, calls int
	}{{"500ops×40calls", 500, 40}, {"2500ops×40calls", 2500, 40}, {"100ops×1000calls", 100, 1000}} {
		h := simulate(100, size.ops, size.calls)
		b.Run(size.name, func(b *testing.B) {
			for b.Loop() {
				res, err := linearize.Check(h, time.Minute)
				if err != nil || !res.Linearizable {
					b.Fatalf("%v %v", err, res.Violations)
				}
			}
		})
	}
}
