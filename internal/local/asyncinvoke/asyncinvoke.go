// Package asyncinvoke emulates Lambda's asynchronous invocation with destinations at the
// local stack's edge. kumo queues Event invocations one at a time per function and drops
// how they ended; Lambda runs them as concurrently as the function's concurrency allows,
// retries a throttled one until it is too old, and hands a record of how each ended to the
// function's destinations (PutFunctionEventInvokeConfig). longrun's recorder depends on that
// record to hear how a step it sent ended, so the edge plays Lambda's part for every
// function that has an event invoke config, as the stream pollers play the event source
// mappings'. Everything else passes to the rest of the edge.
//
// What it does as Lambda does: the Event invocation is answered 202 at once; the function
// runs through the edge as a synchronous invocation, so the quotas gate counts it against
// the function's concurrency and a refusal is retried with backoff until the event's
// maximum age, when the failure destination gets EventAgeExceeded; a function error is run
// again MaximumRetryAttempts times, then RetriesExhausted; the destination is invoked with
// Lambda's invocation record (version 1.0), retried twice if it fails, as Lambda invokes a
// destination function asynchronously. What it does not: it keeps nothing across a
// restart, and an event queued when the stack closes is dropped.
package asyncinvoke

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"

	"github.com/longrun-dev/longrun/internal/aws/lambdainvoke"
	"github.com/longrun-dev/longrun/internal/local/quotas"
)

// Config is a function's event invoke config, as PutFunctionEventInvokeConfig sets it.
type Config struct {
	FunctionArn              string
	MaximumRetryAttempts     int
	MaximumEventAgeInSeconds int
	OnSuccess, OnFailure     string // destination function ARNs ("" for none)
}

// Invoke runs a function synchronously, through the edge: its answer, the function's
// error type when it failed ("" when it did not), or how the invocation itself failed.
type Invoke func(ctx context.Context, function string, payload []byte) (out []byte, functionError string, err error)

// Options configure an Emulator.
type Options struct {
	// Next is the rest of the edge.
	Next http.Handler
	// Invoke runs a function through the edge; ViaSDK is the usual one.
	Invoke Invoke
	// Backoff is the wait before retry n (from 1) of a refused or failed attempt; nil
	// waits 100 ms doubling up to 5 s (Lambda waits longer; the local stack's tests would
	// only wait).
	Backoff func(n int) time.Duration
	Log     *slog.Logger
	// Now is the clock of events' ages; nil is time.Now.
	Now func() time.Time
}

// Emulator is the edge's part that plays Lambda's asynchronous invocation.
type Emulator struct {
	opts    Options
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	configs map[string]Config // by function name
}

// New returns an emulator in front of opts.Next; Close stops its deliveries.
func New(opts Options) *Emulator {
	if opts.Backoff == nil {
		opts.Backoff = func(n int) time.Duration { return min(100*time.Millisecond<<min(n-1, 6), 5*time.Second) }
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Emulator{opts: opts, ctx: ctx, cancel: cancel, configs: map[string]Config{}}
}

// Close drops the events not delivered yet and waits for the deliveries under way to stop.
func (e *Emulator) Close() {
	e.cancel()
	e.wg.Wait()
}

const configPrefix = "/2019-09-25/functions/"

// ServeHTTP serves the event invoke config API and the Event invocations of configured
// functions, and passes everything else on.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, configPrefix); ok {
		if name, ok := strings.CutSuffix(rest, "/event-invoke-config"); ok {
			e.serveConfig(w, r, functionName(name))
			return
		}
	}
	if fn, ok := quotas.InvokedFunction(r); ok && r.Method == http.MethodPost && r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		e.mu.Lock()
		cfg, configured := e.configs[functionName(fn)]
		e.mu.Unlock()
		if configured {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			e.wg.Add(1)
			go func() { defer e.wg.Done(); e.deliver(cfg, fn, body) }()
			w.Header().Set("X-Amzn-Requestid", uuid.NewString())
			w.WriteHeader(http.StatusAccepted)
			return
		}
	}
	e.opts.Next.ServeHTTP(w, r)
}

// functionName is the name in a function name, ARN or partial ARN, without a qualifier.
func functionName(s string) string {
	if i := strings.Index(s, ":function:"); i >= 0 {
		s = s[i+len(":function:"):]
	}
	name, _, _ := strings.Cut(s, ":")
	return name
}

// configBody is the event invoke config on the wire (FunctionEventInvokeConfig).
type configBody struct {
	FunctionArn              string `json:"FunctionArn,omitempty"`
	LastModified             float64
	MaximumRetryAttempts     *int          `json:",omitempty"`
	MaximumEventAgeInSeconds *int          `json:",omitempty"`
	DestinationConfig        *destinations `json:",omitempty"`
}

// destinations is an event invoke config's DestinationConfig on the wire.
type destinations struct {
	OnSuccess *destination `json:",omitempty"`
	OnFailure *destination `json:",omitempty"`
}

type destination struct{ Destination string }

func (e *Emulator) serveConfig(w http.ResponseWriter, r *http.Request, name string) {
	switch r.Method {
	case http.MethodPut, http.MethodPost:
		var in configBody
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
			return
		}
		cfg := Config{FunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:" + name, MaximumRetryAttempts: 2,
			MaximumEventAgeInSeconds: 21600}
		if in.MaximumRetryAttempts != nil {
			cfg.MaximumRetryAttempts = *in.MaximumRetryAttempts
		}
		if in.MaximumEventAgeInSeconds != nil {
			cfg.MaximumEventAgeInSeconds = *in.MaximumEventAgeInSeconds
		}
		if d := in.DestinationConfig; d != nil {
			if d.OnSuccess != nil {
				cfg.OnSuccess = d.OnSuccess.Destination
			}
			if d.OnFailure != nil {
				cfg.OnFailure = d.OnFailure.Destination
			}
		}
		if cfg.MaximumRetryAttempts < 0 || cfg.MaximumRetryAttempts > 2 || cfg.MaximumEventAgeInSeconds < 60 || cfg.MaximumEventAgeInSeconds > 21600 {
			writeError(w, http.StatusBadRequest, "InvalidParameterValueException", "MaximumRetryAttempts must be 0 to 2 and MaximumEventAgeInSeconds 60 to 21600")
			return
		}
		e.mu.Lock()
		e.configs[name] = cfg
		e.mu.Unlock()
		writeConfig(w, cfg)
	case http.MethodGet:
		e.mu.Lock()
		cfg, ok := e.configs[name]
		e.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "ResourceNotFoundException", "The function "+name+" has no event invoke config")
			return
		}
		writeConfig(w, cfg)
	case http.MethodDelete:
		e.mu.Lock()
		delete(e.configs, name)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, "InvalidParameterValueException", r.Method)
	}
}

func writeConfig(w http.ResponseWriter, cfg Config) {
	out := configBody{FunctionArn: cfg.FunctionArn, LastModified: float64(time.Now().Unix()),
		MaximumRetryAttempts: &cfg.MaximumRetryAttempts, MaximumEventAgeInSeconds: &cfg.MaximumEventAgeInSeconds}
	out.DestinationConfig = &destinations{}
	if cfg.OnSuccess != "" {
		out.DestinationConfig.OnSuccess = &destination{cfg.OnSuccess}
	}
	if cfg.OnFailure != "" {
		out.DestinationConfig.OnFailure = &destination{cfg.OnFailure}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": message})
}

// deliver runs one event as Lambda does, then tells its destination how it ended.
func (e *Emulator) deliver(cfg Config, fn string, payload []byte) {
	ctx := e.ctx
	expires := e.opts.Now().Add(time.Duration(cfg.MaximumEventAgeInSeconds) * time.Second)
	rec := lambdainvoke.Record{Version: "1.0", RequestPayload: json.RawMessage(payload)}
	rec.RequestContext.RequestID = uuid.NewString()
	// The ARN the function was invoked by, as Lambda's record has it, with the version run.
	arn := cfg.FunctionArn
	if strings.HasPrefix(fn, "arn:") {
		arn, _, _ = strings.Cut(fn, ":$") // a qualifier given is dropped
	}
	rec.RequestContext.FunctionArn = arn + ":$LATEST"
	invoked, refusals := 0, 0
	for {
		out, fnErr, err := e.opts.Invoke(ctx, fn, payload)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Refused before the function ran (throttled, or no sandbox to run it): Lambda
			// keeps the event and tries again until it is too old.
			refusals++
			if !e.opts.Now().Add(e.opts.Backoff(refusals)).Before(expires) {
				rec.RequestContext.Condition = lambdainvoke.ConditionEventAgeExceeded
				rec.RequestContext.ApproximateInvokeCount = invoked
				e.tell(cfg.OnFailure, rec)
				return
			}
			e.opts.Log.Debug("async invoke refused, retrying", "function", fn, "error", err.Error())
			if !e.sleep(e.opts.Backoff(refusals)) {
				return
			}
			continue
		}
		invoked++
		if fnErr != "" && invoked <= cfg.MaximumRetryAttempts {
			if !e.sleep(e.opts.Backoff(invoked)) {
				return
			}
			continue
		}
		rec.RequestContext.ApproximateInvokeCount = invoked
		rec.ResponsePayload = json.RawMessage(out)
		rec.ResponseContext = &struct {
			StatusCode    int    `json:"statusCode"`
			FunctionError string `json:"functionError,omitempty"`
		}{StatusCode: http.StatusOK, FunctionError: fnErr}
		if fnErr != "" {
			rec.RequestContext.Condition = lambdainvoke.ConditionRetriesExhausted
			e.tell(cfg.OnFailure, rec)
		} else {
			rec.RequestContext.Condition = lambdainvoke.ConditionSuccess
			e.tell(cfg.OnSuccess, rec)
		}
		return
	}
}

// tell invokes destination with rec, as Lambda invokes a destination function: retried
// twice if it fails, and for as long as it is refused (until the stack closes).
func (e *Emulator) tell(destination string, rec lambdainvoke.Record) {
	if destination == "" {
		return
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return
	}
	failures, refusals := 0, 0
	for {
		_, fnErr, err := e.opts.Invoke(e.ctx, destination, body)
		switch {
		case e.ctx.Err() != nil:
			return
		case err != nil:
			refusals++
			if !e.sleep(e.opts.Backoff(refusals)) {
				return
			}
			continue
		case fnErr == "":
			return
		}
		failures++
		if failures > 2 {
			e.opts.Log.Warn("async invoke: destination failed, record dropped", "destination", destination, "error", fnErr)
			return
		}
		if !e.sleep(e.opts.Backoff(failures)) {
			return
		}
	}
}

func (e *Emulator) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ViaSDK is an Invoke through client (pointed at the edge), with no retries of the SDK's
// own: the emulator retries as Lambda does.
func ViaSDK(client *lambda.Client) Invoke {
	return func(ctx context.Context, function string, payload []byte) ([]byte, string, error) {
		out, err := client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload},
			func(o *lambda.Options) { o.RetryMaxAttempts = 1 })
		if err != nil {
			var api smithy.APIError
			if errors.As(err, &api) {
				return nil, "", errors.New(api.ErrorCode() + ": " + api.ErrorMessage())
			}
			return nil, "", err
		}
		if out.FunctionError != nil {
			var fe struct{ ErrorType string }
			_ = json.NewDecoder(bytes.NewReader(out.Payload)).Decode(&fe)
			return out.Payload, cmp.Or(fe.ErrorType, aws.ToString(out.FunctionError)), nil
		}
		return out.Payload, "", nil
	}
}
