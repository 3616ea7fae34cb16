package quotas_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/sivchari/kumo"

	"github.com/longrun-dev/longrun/internal/local/quotas"
)

// kumoRig serves a gate in front of real kumo, embedded in-process, through a reverse proxy
// that keeps Host and Authorization as devstack's edge does (kumo routes Lambda calls by the
// signature's credential scope).
func kumoRig(t *testing.T, limits quotas.Limits) (*quotas.Gate, *clock, string) {
	t.Helper()
	ks := kumo.NewServer()
	t.Cleanup(ks.Close)
	u, err := url.Parse(ks.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = pr.In.Host },
		ErrorLog: log.New(io.Discard, "", 0)} // the long polls cut at cleanup are not news
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := quotas.New(proxy, quotas.Options{Limits: limits, Now: clk.Now})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, clk, srv.URL
}

// unique names a resource for one test run: kumo's servers in a process share their state,
// so a second run (go test -count) would find the first's function or state machine.
func unique(prefix string) string { return prefix + "-" + strings.ToLower(rand.Text()[:10]) }

// StartExecution against kumo's Step Functions, through the gate: a bucket of 2 refilling
// 1/s starts two executions of a Pass state machine, throttles the third before kumo sees
// it, and starts a fourth a second later; the executions kumo started are there to describe.
func TestKumoStartExecutionIsThrottled(t *testing.T) {
	_, clk, edge := kumoRig(t, quotas.Limits{StepFunctions: map[string]quotas.Bucket{"StartExecution": {Size: 2, RefillPerSecond: 1}}})
	_, sc := clients(edge)
	ctx := context.Background()
	m, err := sc.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String(unique("pass")),
		Definition: aws.String(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`),
		RoleArn:    aws.String("arn:aws:iam::000000000000:role/test")})
	if err != nil {
		t.Fatal(err)
	}
	start := func(name string) (*sfn.StartExecutionOutput, error) {
		return sc.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: m.StateMachineArn, Name: aws.String(name), Input: aws.String(`{}`)})
	}
	var started []string
	for _, name := range []string{"a", "b"} {
		out, err := start(name)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		started = append(started, aws.ToString(out.ExecutionArn))
	}
	_, err = start("c")
	wantStatesThrottled(t, err)
	clk.Advance(time.Second)
	if _, err := start("d"); err != nil {
		t.Fatalf("a second later: %v", err)
	}
	list, err := sc.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: m.StateMachineArn})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list.Executions {
		names = append(names, aws.ToString(e.Name))
	}
	if len(names) != 3 || strings.Contains(strings.Join(names, ","), "c") {
		t.Fatalf("kumo has executions %v, want a, b and d", names)
	}
	if _, err := sc.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(started[0])}); err != nil {
		t.Fatalf("describe: %v", err)
	}
}

// invocation is one invocation a test runtime picked up from kumo, waiting for its answer.
type invocation struct {
	payload []byte
	answer  chan []byte
}

// serveRuntime is a function's sandbox on kumo's Runtime API, reached through the gate
// under devstack's prefix (/_runtime/<name>, AWS_LAMBDA_RUNTIME_API): it long-polls for the
// next invocation, hands it to the test, and posts the test's answer.
func serveRuntime(ctx context.Context, edge, fn string, picked chan<- invocation) {
	base := edge + "/_runtime/" + fn + "/2018-06-01/runtime/invocation/"
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"next", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		payload, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inv := invocation{payload: payload, answer: make(chan []byte, 1)}
		select {
		case picked <- inv:
		case <-ctx.Done():
			return
		}
		var answer []byte
		select {
		case answer = <-inv.answer:
		case <-ctx.Done():
			return
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+resp.Header.Get("Lambda-Runtime-Aws-Request-Id")+"/response", bytes.NewReader(answer))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// A function reserved at 2 on real kumo, its runtime polling through the gate: two
// invocations in flight run, the third is refused with ReservedFunctionConcurrentInvocationLimitExceeded
// while the runtime's polls pass, and once one has answered a new one runs.
func TestKumoReservedConcurrency(t *testing.T) {
	fn := unique("f")
	g, _, edge := kumoRig(t, quotas.Limits{Reserved: map[string]int{fn: 2}})
	lc, _ := clients(edge)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // runs before the servers close: the long polls end first
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(fn),
		Role: aws.String("arn:aws:iam::000000000000:role/test"), Runtime: lambdatypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Code: &lambdatypes.FunctionCode{ZipFile: []byte("local")}, Timeout: aws.Int32(30)}); err != nil {
		t.Fatal(err)
	}
	picked := make(chan invocation)
	for range 3 {
		go serveRuntime(ctx, edge, fn, picked)
	}
	results := make(chan error, 4)
	invoke := func(payload string) {
		go func() {
			out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(payload)})
			if err == nil && string(out.Payload) != payload {
				err = fmt.Errorf("answer %s to %s", out.Payload, payload)
			}
			results <- err
		}()
	}
	pick := func() invocation {
		t.Helper()
		select {
		case inv := <-picked:
			return inv
		case <-ctx.Done():
			t.Fatal("no invocation reached the runtime")
			return invocation{}
		}
	}
	answered := func() {
		t.Helper()
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("an invocation within the reservation: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("no answer")
		}
	}

	// kumo answers at once that the function has no runtime until a poll reached it, and
	// nothing outside kumo shows when one has: invoke until one is picked up (a readiness
	// wait, as devstack's waitRegistered; nothing below depends on time).
	for attempt := 0; ; attempt++ {
		invoke(`"warm"`)
		select {
		case inv := <-picked:
			inv.answer <- inv.payload
			answered()
		case err := <-results:
			if err == nil || !strings.Contains(err.Error(), "no runtime handler") || attempt == 200 {
				t.Fatalf("warming up: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}

	invoke(`"one"`)
	invoke(`"two"`)
	first, second := pick(), pick()
	_, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: []byte(`"three"`)})
	wantThrottled(t, err, quotas.ReasonReserved)

	first.answer <- first.payload
	answered()
	invoke(`"four"`)
	fourth := pick()
	if string(fourth.payload) != `"four"` {
		t.Fatalf("the runtime got %s, want the fourth invocation", fourth.payload)
	}
	second.answer <- second.payload
	fourth.answer <- fourth.payload
	answered()
	answered()
	st := g.Stats()
	if st.PeakInFlight[fn] != 2 || st.InFlight[fn] != 0 || st.Refusals["TooManyRequestsException (ReservedFunctionConcurrentInvocationLimitExceeded)"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}
