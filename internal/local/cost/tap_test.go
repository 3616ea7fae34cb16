package cost

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/longrun-dev/longrun/internal/local/quotas"
)

func TestFindString(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"operationId":"op_1","gate":{"operationId":"op_2"}}`, "op_1"},
		{`{"state":{"operationId":"op_1","x":1},"worker":"arn"}`, "op_1"},
		{`{"a":{"b":{"operationId":"deep"}},"z":{"operationId":"shallow"}}`, "shallow"},
		{`{"b":{"operationId":"second"},"a":{"operationId":"first"}}`, "first"}, // one depth: by key name
		{`[{"operationId":7},{"operationId":"op_3"}]`, "op_3"},
		{`{}`, ""}, {`not json`, ""},
	} {
		if got := FindString([]byte(tc.doc), "operationId"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.doc, got, tc.want)
		}
	}
}

func TestInvokedFunction(t *testing.T) {
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/2015-03-31/functions/recorder/invocations", "recorder"},
		{"POST", "/2015-03-31/functions/arn:aws:lambda:us-east-1:000000000000:function:worker-demo-task/invocations", "worker-demo-task"},
		{"POST", "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A000000000000%3Afunction%3Aapi%3A%24LATEST/invocations", "api"},
		{"GET", "/2015-03-31/functions/api/invocations", ""},
		{"POST", "/2015-03-31/functions/api", ""},
		{"GET", "/_runtime/api/2018-06-01/runtime/invocation/next", ""},
	} {
		got, _ := quotas.InvokedFunction(httptest.NewRequest(tc.method, tc.path, nil))
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestEntrySize(t *testing.T) {
	// Time 14, "longrun" 7, "Operation State Changed" 23, the detail 11, a resource 3.
	if got := EntrySize("longrun", "Operation State Changed", `{"state":1}`, []string{"arn"}, true); got != 14+7+23+11+3 {
		t.Fatal(got)
	}
}

// fakeEdge answers as kumo would: invocations by function, PutEvents with one entry refused,
// SQS sends.
func fakeEdge(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Header.Get("X-Amz-Target") == "AWSEvents.PutEvents":
			io.WriteString(w, `{"FailedEntryCount":1,"Entries":[{"EventId":"1"},{"ErrorCode":"InternalFailure"},{"EventId":"3"}]}`)
		case strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."):
			io.WriteString(w, `{}`)
		case r.Header.Get("X-Amz-Target") == "AWSStepFunctions.StartExecution":
			if bytes.Contains(body, []byte("again")) {
				http.Error(w, `{"__type":"ExecutionAlreadyExists"}`, http.StatusBadRequest)
				return
			}
			io.WriteString(w, `{"executionArn":"arn"}`)
		case strings.Contains(r.URL.Path, "/functions/recorder/"):
			if bytes.Contains(body, []byte("fail")) {
				w.Header().Set("X-Amz-Function-Error", "Unhandled")
				io.WriteString(w, `{"errorType":"boom"}`)
				return
			}
			io.WriteString(w, `{"next":"work","request":{"operationId":"op_9"}}`)
		case strings.Contains(r.URL.Path, "/functions/worker-x/"):
			http.Error(w, "gone", http.StatusBadGateway)
		default:
			io.WriteString(w, `{"other":true}`)
		}
	})
}

func TestTapRecords(t *testing.T) {
	clock := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tap := NewTap(func() time.Time { clock = clock.Add(10 * time.Millisecond); return clock })
	srv := httptest.NewServer(tap.Wrap(fakeEdge(t), "http://127.0.0.1:1"))
	defer srv.Close()
	post := func(path, target, body string, header ...string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if target != "" {
			req.Header.Set("X-Amz-Target", target)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	post("/2015-03-31/functions/recorder/invocations", "", `{"state":{"operationId":"op_1"},"worker":"w"}`)
	post("/2015-03-31/functions/recorder/invocations", "", `{"operationId":"op_1","fail":true}`)
	post("/2015-03-31/functions/worker-x/invocations", "", `{"operationId":"op_1"}`)
	post("/2015-03-31/functions/api/invocations", "", `{}`, "X-Amz-Invocation-Type", "Event")
	post("/", "AWSEvents.PutEvents", `{"Entries":[{"Source":"longrun","DetailType":"d","Detail":"{}"},{"Source":"x","DetailType":"y","Detail":"z"},{"Source":"longrun","DetailType":"dd","Detail":"{}","Time":"2026-11-30T10:00:00Z"}]}`)
	post("/", "AmazonSQS.SendMessage", `{"QueueUrl":"http://127.0.0.1:4566/000000000000/longrun-dispatcher-dlq","MessageBody":"hello","MessageAttributes":{"a":{"DataType":"String","StringValue":"b"}}}`)
	post("/", "AmazonSQS.SendMessageBatch", `{"QueueUrl":"http://h/1/q","Entries":[{"MessageBody":"ab"},{"MessageBody":"cde"}]}`)
	post("/other", "", `{}`)
	post("/", "AWSStepFunctions.StartExecution", `{"name":"op_1"}`)
	post("/", "AWSStepFunctions.StartExecution", `{"name":"op_1-1"}`)
	post("/", "AWSStepFunctions.StartExecution", `{"name":"op_1-1","again":true}`) // refused: starts nothing

	invs, events, sqs, _ := tap.Snapshot()
	if len(invs) != 4 {
		t.Fatalf("%d invocations: %+v", len(invs), invs)
	}
	ok, failed, noAnswer, async := invs[0], invs[1], invs[2], invs[3]
	if ok.Function != "recorder" || ok.OperationID != "op_1" || ok.Next != "work" || ok.Failed() || ok.Duration != 10*time.Millisecond {
		t.Errorf("recorder: %+v", ok)
	}
	if !failed.FunctionError || failed.Next != "" || failed.OperationID != "op_1" {
		t.Errorf("failed recorder: %+v", failed)
	}
	if noAnswer.Function != "worker-x" || !noAnswer.NoResponse || noAnswer.FunctionError {
		t.Errorf("worker without an answer: %+v", noAnswer)
	}
	if !async.Async || async.Next != "" {
		t.Errorf("async api: %+v", async)
	}
	// The refused entry is not published; the third has a Time.
	if len(events) != 2 || events[0] != 7+1+2 || events[1] != 14+7+2+2 {
		t.Errorf("events %v", events)
	}
	if len(sqs) != 2 || sqs[0] != (SQSCall{Action: "SendMessage", Queue: "longrun-dispatcher-dlq", Messages: 1, Bytes: 5 + 1 + 6 + 1}) ||
		sqs[1] != (SQSCall{Action: "SendMessageBatch", Queue: "q", Messages: 2, Bytes: 5}) {
		t.Errorf("sqs %+v", sqs)
	}
	if n := tap.Executions(); n != 2 {
		t.Errorf("%d executions started, want 2", n)
	}
	tap.Reset()
	if invs, events, sqs, _ := tap.Snapshot(); len(invs)+len(events)+len(sqs)+tap.Executions() != 0 {
		t.Fatal("Reset kept records")
	}
}

func TestLogs(t *testing.T) {
	var out bytes.Buffer
	l := NewLogs(&out)
	io.WriteString(l, "api | before counting\n")
	l.Count(true)
	io.WriteString(l, "api | {\"level\":\"INFO\"}\nrecorder | ab")
	io.WriteString(l, "c\nnot a function line\nbuild output | x\napi | \n")
	l.Count(false)
	io.WriteString(l, "api | after\n")
	bytes, lines := l.Counts()
	if bytes["api"] != int64(len(`{"level":"INFO"}`)) || lines["api"] != 2 || bytes["recorder"] != 3 || len(bytes) != 2 {
		t.Fatalf("%v %v", bytes, lines)
	}
	if !strings.Contains(out.String(), "before counting") || !strings.HasSuffix(out.String(), "api | after\n") {
		t.Fatalf("not passed on: %q", out.String())
	}
	l.Reset()
	if b, _ := l.Counts(); len(b) != 0 {
		t.Fatal(b)
	}
}
