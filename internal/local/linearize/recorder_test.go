package linearize_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

func TestTheRecorderTimesEachCallOnItsClock(t *testing.T) {
	var now atomic.Int64
	rec := linearize.NewRecorder(func() int64 { return now.Add(10) })
	a := rec.Begin(create("k"))
	b := rec.Begin(get("op_1"))
	a.End(created("op_1"))
	a.End(refused(400, problem.InvalidInput)) // a second End changes nothing
	h := rec.History()
	if len(h) != 2 || h[0] != at(10, 30, create("k"), created("op_1")) {
		t.Fatalf("got %+v", h)
	}
	// A call under way has no answer yet: it is unknown, whatever its return says.
	if h[1].Call != 20 || h[1].Output != noAnswer || !h[1].Output.Unknown() {
		t.Fatalf("got %+v", h[1])
	}
	b.End(read(accepted, 1))
	if e := rec.History()[1]; e.Output != read(accepted, 1) || e.Call != 20 || e.Return <= 30 {
		t.Fatalf("got %+v", e)
	}
}

// Drivers record concurrently against a server that is one register per operation; the
// history they leave is linearizable, and every call is in it.
func TestTheRecorderIsSafeForConcurrentDrivers(t *testing.T) {
	rec := linearize.NewRecorder(nil)
	var mu sync.Mutex
	versions := map[string]int{}
	var wg sync.WaitGroup
	for d := range 4 {
		id := fmt.Sprintf("op_%d", d%2)
		wg.Go(func() {
			for range 100 {
				c := rec.Begin(get(id))
				mu.Lock()
				if versions[id] < 3 {
					versions[id]++ // the background: created, dispatched, running
				}
				v := versions[id]
				mu.Unlock()
				c.End(read([]operation.State{"", accepted, dispatched, running}[v], v))
			}
		})
	}
	wg.Wait()
	h := rec.History()
	if len(h) != 400 {
		t.Fatalf("%d calls recorded", len(h))
	}
	for _, e := range h {
		if e.Return < e.Call {
			t.Fatalf("answered before called: %+v", e)
		}
	}
	mustLinearize(t, h)
}

func TestAFailedCheckDrawsItsFailingPartitions(t *testing.T) {
	h := with(valid(), at(100, 110, get("op_B"), read(cancelling, 3)))
	res := check(t, h)
	path := filepath.Join(t.TempDir(), "history.html")
	if err := res.VisualizeFile(path); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(page); !strings.Contains(s, "<html") || !strings.Contains(s, "get op_B") || strings.Contains(s, "get op_A") {
		t.Fatal("the page does not show op_B's calls alone")
	}
}
