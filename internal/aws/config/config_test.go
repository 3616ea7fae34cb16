package config

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/sizing"
	"github.com/longrun-dev/longrun/internal/aws/tracing"
	"github.com/longrun-dev/longrun/internal/service/reconcile"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "")
	if _, err := FromEnv(); err == nil {
		t.Fatal("a missing table must be an error")
	}
	t.Setenv("LONGRUN_TABLE", "t")
	c, err := FromEnv()
	if err != nil || c.Window != 24*time.Hour || c.Quota != 1000 || c.PrincipalQuota != 500 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	t.Setenv("LONGRUN_IDEMPOTENCY_WINDOW", "2h")
	t.Setenv("LONGRUN_QUOTA", "0")
	if c, err := FromEnv(); err != nil || c.Window != 2*time.Hour || c.Quota != 0 {
		t.Fatalf("overrides: %+v %v", c, err)
	}
	for k, v := range map[string]string{"LONGRUN_IDEMPOTENCY_WINDOW": "-1h", "LONGRUN_QUOTA": "many"} {
		t.Setenv(k, v)
		if _, err := FromEnv(); err == nil {
			t.Fatalf("%s=%s accepted", k, v)
		}
		t.Setenv(k, "")
	}
}

func TestListsFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	t.Setenv("LONGRUN_COGNITO_CLIENT_IDS", " a, b ,,")
	t.Setenv("LONGRUN_OPERATOR_PRINCIPALS", "arn:aws:iam::1:role/ops")
	c, err := FromEnv()
	if err != nil || len(c.CognitoClientIDs) != 2 || c.CognitoClientIDs[1] != "b" || len(c.OperatorPrincipals) != 1 {
		t.Fatalf("%+v %v", c, err)
	}
}

// Demo types are off unless LONGRUN_DEMO_TYPES says true; a typo fails at start.
func TestDemoTypesFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	for v, want := range map[string]bool{"": false, "false": false, "true": true, "1": true} {
		t.Setenv("LONGRUN_DEMO_TYPES", v)
		c, err := FromEnv()
		if err != nil || c.DemoTypes != want {
			t.Fatalf("LONGRUN_DEMO_TYPES=%q: %v %v, want %v", v, c.DemoTypes, err, want)
		}
		types, err := Types(c)
		if err != nil {
			t.Fatal(err)
		}
		_, demo := types.Lookup("demo.task")
		if _, orders := types.Lookup("export.orders"); demo != want || !orders {
			t.Fatalf("LONGRUN_DEMO_TYPES=%q: registry has demo.task %v, export.orders %v", v, demo, orders)
		}
	}
	t.Setenv("LONGRUN_DEMO_TYPES", "yes")
	if _, err := FromEnv(); err == nil {
		t.Fatal("LONGRUN_DEMO_TYPES=yes accepted")
	}
}

// Tracing is read with the rest (off by default), and a typo fails at start.
func TestTracingFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	t.Setenv("LONGRUN_TRACING", "")
	if c, err := FromEnv(); err != nil || c.Tracing.Mode != tracing.Off {
		t.Fatalf("default: %+v %v", c.Tracing, err)
	}
	t.Setenv("LONGRUN_TRACING", "file")
	t.Setenv("LONGRUN_TRACE_FILE", "/tmp/spans.jsonl")
	if c, err := FromEnv(); err != nil || c.Tracing != (tracing.Config{Mode: tracing.File, File: "/tmp/spans.jsonl"}) {
		t.Fatalf("file: %+v %v", c.Tracing, err)
	}
	t.Setenv("LONGRUN_TRACING", "on")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "LONGRUN_TRACING") {
		t.Fatalf("LONGRUN_TRACING=on: %v", err)
	}
}

// The functions answer JSON as it is: an & stays one byte, so a recorder's decision that
// fits Step Functions' 256 KiB limit as data still fits it on the wire.
func TestAnswersAreNotHTMLEscaped(t *testing.T) {
	h := handlerOf(func(context.Context, json.RawMessage) (map[string]string, error) {
		return map[string]string{"note": "<&>"}, nil
	})
	out, err := h.Invoke(context.Background(), []byte(`{}`))
	if err != nil || !strings.Contains(string(out), `"<&>"`) {
		t.Fatalf("%s %v; want the answer unescaped", out, err)
	}
}

// The reconciler's pacing defaults to a share of the region's Step Functions buckets (half
// of each refill; the smaller buckets when the region is unknown); settings override it and a
// bad one fails at start.
func TestReconcileFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	for region, want := range map[string]Reconcile{
		"us-east-1":      {DispatchRate: 150, DescribeRate: 7.5, Budget: 45 * time.Second, Concurrency: 16},
		"eu-west-1":      {DispatchRate: 150, DescribeRate: 7.5, Budget: 45 * time.Second, Concurrency: 16},
		"ap-southeast-2": {DispatchRate: 75, DescribeRate: 5, Budget: 45 * time.Second, Concurrency: 16},
		"":               {DispatchRate: 75, DescribeRate: 5, Budget: 45 * time.Second, Concurrency: 16},
	} {
		t.Setenv("AWS_REGION", region)
		if c, err := FromEnv(); err != nil || c.Reconcile != want {
			t.Errorf("%q: %+v %v, want %+v", region, c.Reconcile, err, want)
		}
	}
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("LONGRUN_DISPATCH_RATE", "600")
	t.Setenv("LONGRUN_DESCRIBE_RATE", "2.5")
	t.Setenv("LONGRUN_RECONCILE_BUDGET", "0")
	t.Setenv("LONGRUN_RECONCILE_CONCURRENCY", "4")
	want := Reconcile{DispatchRate: 600, DescribeRate: 2.5, Budget: 0, Concurrency: 4}
	if c, err := FromEnv(); err != nil || c.Reconcile != want {
		t.Fatalf("overrides: %+v %v, want %+v", c.Reconcile, err, want)
	}
	for k, v := range map[string]string{"LONGRUN_DISPATCH_RATE": "0", "LONGRUN_DESCRIBE_RATE": "-1",
		"LONGRUN_RECONCILE_BUDGET": "2m", "LONGRUN_RECONCILE_CONCURRENCY": "0"} {
		old := os.Getenv(k)
		t.Setenv(k, v)
		if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v; want it refused", k, v, err)
		}
		t.Setenv(k, old)
	}
	t.Setenv("LONGRUN_DISPATCH_RATE", "NaN")
	if _, err := FromEnv(); err == nil {
		t.Error("LONGRUN_DISPATCH_RATE=NaN accepted")
	}
}

// roundTrip is what one dispatch is assumed to take end to end (a consistent read,
// StartExecution, a transactional append), for the concurrency's bound on the rate. An
// assumption, not a measurement: docs/capacity.md says so.
const roundTrip = 60 * time.Millisecond

// drain is reconcile.Drain for pace with the function's page and the construct's schedule.
func drain(pace Reconcile) reconcile.Drain {
	return reconcile.Drain{Rate: pace.DispatchRate, Budget: pace.Budget, Page: 100, Period: sizing.ReconcileEvery,
		Concurrency: pace.Concurrency, RoundTrip: roundTrip}
}

// The figures docs/capacity.md quotes for draining a backlog ("Draining a backlog"): with the
// defaults, and before them (one page of 100 a run, one operation at a time, unpaced), for
// the 60,000 accepted operations.
func TestDrainFigures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		d         reconcile.Drain
		perSecond float64
		perRun    int
		perMinute float64
		time      time.Duration
	}{
		{"before: one page a run", drain(Reconcile{Budget: 0, Concurrency: 1}), 1 / roundTrip.Seconds(), 100, 100, 599*time.Minute + 6*time.Second},
		{"us-east-1", drain(DefaultReconcile("us-east-1")), 150, 6750, 6750, 8*time.Minute + 40*time.Second},
		{"other regions", drain(DefaultReconcile("ap-southeast-2")), 75, 3375, 3375, 17*time.Minute + 35*time.Second},
		// A quota raised to 1,000/s and all of it given to the reconciler: the concurrency
		// binds, 16 ÷ 60 ms.
		{"concurrency bound", drain(Reconcile{DispatchRate: 1000, Budget: 45 * time.Second, Concurrency: 16}), 16 / roundTrip.Seconds(), 12000, 12000, 4*time.Minute + 45*time.Second},
	} {
		d := tc.d
		if ps := d.PerSecond(); ps < tc.perSecond-1e-9 || ps > tc.perSecond+1e-9 {
			t.Errorf("%s: %v a second, want %v", tc.name, ps, tc.perSecond)
		}
		if d.PerRun() != tc.perRun || d.PerMinute() != tc.perMinute {
			t.Errorf("%s: %d a run, %v a minute; want %d, %v", tc.name, d.PerRun(), d.PerMinute(), tc.perRun, tc.perMinute)
		}
		if got := d.Time(60000); got != tc.time {
			t.Errorf("%s: 60,000 drain in %s, want %s", tc.name, got, tc.time)
		}
	}
}

// The console signs in with a pasted token unless both Cognito settings are given; a domain
// that is not an https origin, or one setting without the other, fails at start.
func TestConsoleFromEnv(t *testing.T) {
	t.Setenv("LONGRUN_TABLE", "t")
	c, err := FromEnv()
	if err != nil || c.Console.CognitoDomain != "" || c.Console.ClientID != "" {
		t.Fatalf("%+v %v", c.Console, err)
	}
	t.Setenv("LONGRUN_CONSOLE_COGNITO_DOMAIN", "https://longrun-dev.auth.us-east-1.amazoncognito.com/")
	t.Setenv("LONGRUN_CONSOLE_CLIENT_ID", "4abc5def6ghi")
	if c, err = FromEnv(); err != nil || c.Console.CognitoDomain != "https://longrun-dev.auth.us-east-1.amazoncognito.com" || c.Console.ClientID != "4abc5def6ghi" {
		t.Fatalf("%+v %v", c.Console, err)
	}
	for domain, id := range map[string]string{
		"http://longrun-dev.auth.us-east-1.amazoncognito.com": "4abc5def6ghi",
		"longrun-dev": "4abc5def6ghi",
		"https://longrun-dev.auth.us-east-1.amazoncognito.com": "",
		"": "4abc5def6ghi",
	} {
		t.Setenv("LONGRUN_CONSOLE_COGNITO_DOMAIN", domain)
		t.Setenv("LONGRUN_CONSOLE_CLIENT_ID", id)
		if _, err := FromEnv(); err == nil {
			t.Errorf("domain %q, client %q: accepted", domain, id)
		}
	}
}

// One process serves invocations at once (AWS_LAMBDA_MAX_CONCURRENCY, as the local stack
// runs every function): each answer must be its own bytes. aws-lambda-go's Handler.Invoke
// returns a slice of a pooled buffer it has already put back, so another invocation could
// write into an answer still on its way (the local stack's API Gateway saw a static file's
// answer followed by the tail of another's: "not a proxy response", a 502).
func TestConcurrentAnswersAreTheirOwn(t *testing.T) {
	h := handlerOf(func(_ context.Context, in map[string]int) (map[string]string, error) {
		return map[string]string{"body": strings.Repeat(strconv.Itoa(in["n"]%10), 1000+in["n"])}, nil
	})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := g*1000 + i
				out, err := h.Invoke(context.Background(), []byte(fmt.Sprintf(`{"n":%d}`, n)))
				want := `{"body":"` + strings.Repeat(strconv.Itoa(n%10), 1000+n) + `"}`
				if err != nil || string(out) != want {
					select {
					case errs <- fmt.Sprintf("invocation %d answered %.80q… (%d bytes), want %d bytes (%v)", n, out, len(out), len(want), err):
					default:
					}
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
