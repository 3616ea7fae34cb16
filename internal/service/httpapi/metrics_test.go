package httpapi_test

import (
	"bytes"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/emf"
	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/testkit/emftest"
)

// withMetrics gives the handler the real EMF encoder, writing to buf.
func withMetrics(buf *bytes.Buffer) option {
	return func(e *env) {
		enc, err := emf.New(buf, "longrun-api")
		if err != nil {
			e.t.Fatal(err)
		}
		enc.Now = e.clock.Now
		enc.OnError = func(err error) { e.t.Errorf("metric not written: %v", err) }
		e.handler.Metrics = enc
	}
}

// admissions reads buf's EMF lines back (each validated against the format) and counts the
// Admissions metric by Outcome.
func admissions(t *testing.T, buf *bytes.Buffer) map[string]float64 {
	t.Helper()
	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, p := range points {
		if p.Name != "Admissions" || p.Unit != "Count" || p.Namespace != "longrun" || p.Dims["Service"] != "longrun-api" ||
			len(p.Dims) != 2 || p.Timestamp != t0.UnixMilli() {
			t.Errorf("unexpected point %+v", p)
			continue
		}
		got[p.Dims["Outcome"]] += p.Value
	}
	return got
}

// Every admission is counted once, by the outcome its answer says.
func TestAdmissionsAreCountedByOutcome(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	e := newEnv(t, withQuota(3), withMetrics(&buf))
	expect := func(r res, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
		}
	}
	expect(e.admit("m-1", demo("m1")), http.StatusAccepted)                                              // created
	expect(e.admit("m-1", demo("m1")), http.StatusAccepted)                                              // replayed
	expect(e.admit("m-1", demo("other")), http.StatusConflict)                                           // key_reused
	expect(e.admit("m-2", demo("m1")), http.StatusConflict)                                              // target_busy
	expect(e.admit("m-3", demo("m3")), http.StatusAccepted)                                              // created
	expect(e.admit("m-4", demo("m4")), http.StatusAccepted)                                              // created
	expect(e.admit("m-5", demo("m5")), http.StatusTooManyRequests)                                       // quota_exceeded
	expect(e.do(req{caller: "alice", body: demo("x")}), http.StatusBadRequest)                           // invalid: no key
	expect(e.do(req{caller: "alice", keys: []string{"a", "b"}, body: demo("x")}), http.StatusBadRequest) // invalid: two keys
	expect(e.admit("m-6", `{"type":"no.such.type","input":{}}`), http.StatusBadRequest)                  // invalid
	expect(e.do(req{caller: "alice", keys: []string{"m-7"}, contentType: "text/plain", body: "x"}), http.StatusUnsupportedMediaType)
	// Not admissions: reads and an anonymous POST (refused before admission).
	e.do(req{method: http.MethodGet, caller: "alice"})
	expect(e.do(req{keys: []string{"m-8"}, body: demo("x")}), http.StatusUnauthorized)

	want := map[string]float64{"created": 3, "replayed": 1, "key_reused": 1, "target_busy": 1, "quota_exceeded": 1, "invalid": 4}
	if got := admissions(t, &buf); !reflect.DeepEqual(got, want) {
		t.Fatalf("admissions by outcome\n got %v\nwant %v\n%s", got, want, buf.String())
	}
}

// A store that stays unavailable is counted as unavailable.
func TestUnavailableAdmissionsAreCounted(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	e := newEnv(t, withMetrics(&buf), withClient(func(c dynamo.Client) dynamo.Client {
		return &faultyClient{Client: c, fail: func(int64) error {
			return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
		}}
	}))
	wantProblem(t, e.admit("m-u", demo("u")), http.StatusServiceUnavailable, "unavailable")
	if got := admissions(t, &buf); !reflect.DeepEqual(got, map[string]float64{"unavailable": 1}) {
		t.Fatalf("got %v\n%s", got, buf.String())
	}
}

// The store counts the conflicts it retried (DynamoDB Local runs transactions one at a time,
// so the conflict is injected, as in TestTransactionConflictIsRetried).
func TestStoreCountsConflictsAndRetries(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	e := newEnv(t, withClient(func(c dynamo.Client) dynamo.Client {
		return &faultyClient{Client: c, fail: func(n int64) error {
			if n <= 2 {
				return conflict(5)
			}
			return nil
		}}
	}))
	enc, err := emf.New(&buf, "longrun-api")
	if err != nil {
		t.Fatal(err)
	}
	e.store.Metrics = enc
	if r := e.admit("k-conflict", demo("conflict")); r.status != http.StatusAccepted {
		t.Fatalf("%d %s", r.status, r.body)
	}
	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, p := range points {
		if p.Dims["Call"] != "admit" || p.Unit != "Count" {
			t.Errorf("unexpected %+v", p)
		}
		got[p.Name] += p.Value
	}
	// A conflict on the key's record is waited out with four reads (each after a backoff)
	// before the transaction is tried again: eight retries for two conflicts.
	if want := map[string]float64{"TransactionConflicts": 2, "StoreRetries": 8}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v\n%s", got, want, buf.String())
	}
}

// A cancel that ends work before it was dispatched is an outcome, measured once as every
// writer of an outcome measures it; a cancel of running work is not (its outcome comes
// later, from whoever records it).
func TestCancelBeforeDispatchIsMeasuredAsAnOutcome(t *testing.T) {
	t.Setenv("LONGRUN_METRICS_NAMESPACE", "")
	t.Setenv("LONGRUN_METRICS_DIMENSIONS", "")
	var buf bytes.Buffer
	e := newEnv(t, withMetrics(&buf))
	id := e.admit("k-m1", demo("m1")).json["operationId"].(string)
	e.clock.Set(e.clock.Now().Add(1500 * time.Millisecond))
	e.cancel(id, "alice")
	e.cancel(id, "alice") // repeated: nothing new
	running := e.admit("k-m2", demo("m2")).json["operationId"].(string)
	e.append(running, operation.KindDispatched, operation.KindStarted)
	e.cancel(running, "alice")
	points, err := emftest.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	emftest.Expect(t, points, "Outcome", func(p emftest.Point) bool { return p.Name == "Admissions" }, func(p emftest.Point) {
		if p.Dims["Type"] != "demo.task" || p.Dims["Service"] != "longrun-api" {
			t.Errorf("dimensions %+v", p)
		}
	}, map[emftest.Key]emftest.Want{
		{Name: "OperationLatency", Dim: "canceled"}: {Unit: "Milliseconds", Value: 1500},
		{Name: "StepsRun", Dim: "canceled"}:         {Unit: "Count", Value: 0},
	})
}
