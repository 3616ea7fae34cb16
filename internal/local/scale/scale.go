// Package scale is the scale model (make scale, docs/capacity.md): it drives the local stack,
// in its quota-faithful mode, with a mix of operations as clients would send them, kills the
// functions' processes at random while it does, and reports what a demanding user asks of
// longrun at load: nothing accepted is lost, nothing ends other than as its worker said,
// and every answer any client saw is linearizable under the contract.
//
// Each operation has a plan (its worker's steps, a wait or not, the ending it asks for,
// whether its client sends the request twice or cancels it mid-step); the driver admits it,
// polls it to its end as a client would (Retry-After, backing off), and records every
// request and answer for internal/local/linearize. The report's last line is the one the
// issue asked for:
//
//	scale: admitted N terminal N lost N misclassified N 5xx N backlog-peak N drain Ns p50 Nms p99 Nms slots-per-step N.N linearizable yes|no
package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longrun-dev/longrun/internal/core/operation"
	"github.com/longrun-dev/longrun/internal/core/problem"
	"github.com/longrun-dev/longrun/internal/local/linearize"
)

// Options say how to drive the stack.
type Options struct {
	API    string   // the API's base URL, e.g. http://127.0.0.1:8080
	Tokens []string // one bearer token per caller (each its own tenant)
	// Duration of the load, and the operations admitted per second over it.
	Duration time.Duration
	Rate     float64
	// Shares of the operations (0 to 1): sent twice with the same key, waiting after their
	// first step, cancelled mid-step, ending with a lost result, ending failed.
	Duplicates, Waits, Cancels, Lost, Fails float64
	// Steps and SleepMs shape each operation's work.
	Steps, SleepMs int
	// Kill, when set, kills one of Functions' processes every KillEvery.
	Kill      func(name string) error
	Functions []string
	KillEvery time.Duration
	// Drain bounds the wait, after the load, for every admitted operation to end.
	Drain time.Duration
	// Slots samples the Lambda invocations in flight by function (the quota gate's).
	Slots func() map[string]int
	// Worker and Recorder name the worker's and the recorder's functions, for Slots.
	Worker, Recorder string
	Seed             uint64
	Log              *slog.Logger
	// Client sends the requests; nil is a client with a 30 s timeout.
	Client *http.Client
}

// Report is what the run came to.
type Report struct {
	Admitted, Terminal, Lost, Misclassified int
	// KillUnknown counts operations that ended outcome_unknown (worker_error, or
	// step_timeout where the emulator waits out a dead process) because the worker's
	// process was killed during their step: the contract says such a step may have
	// acted (docs/worker-protocol.md), so they are not misclassified; they are counted apart.
	KillUnknown  int
	FiveXX       int
	BacklogPeak  int
	Drain        time.Duration
	P50, P99     time.Duration
	SlotsPerStep float64
	Linearizable bool
	Calls        int
	Kills        map[string]int
	ByState      map[operation.State]int
	// Wrong lists a few misclassified or lost operations, for the reader.
	Wrong []string
}

// Line is the report's last line.
func (r Report) Line() string {
	yes := "no"
	if r.Linearizable {
		yes = "yes"
	}
	return fmt.Sprintf("scale: admitted %d terminal %d lost %d misclassified %d 5xx %d backlog-peak %d drain %.0fs p50 %dms p99 %dms slots-per-step %.1f linearizable %s",
		r.Admitted, r.Terminal, r.Lost, r.Misclassified, r.FiveXX, r.BacklogPeak, r.Drain.Seconds(),
		r.P50.Milliseconds(), r.P99.Milliseconds(), r.SlotsPerStep, yes)
}

// plan is one operation as the driver means it.
type plan struct {
	n                    int
	token, key, body     string
	duplicate, cancel    bool
	outcome              string // succeed, fail, lost
	id                   string
	admittedAt, endedAt  time.Time
	state                operation.State
	code                 problem.Code
	canceledBeforeTheEnd bool // a cancel was accepted (202) before the work ended
}

// expected says whether the plan's end is what its worker said: its planned ending, or
// canceled when a cancel was accepted first (a cancel that lost the race to the last step
// leaves the worker's ending, which is right too).
func (p *plan) expected() bool {
	want := map[string]operation.State{"succeed": operation.Succeeded, "fail": operation.Failed, "lost": operation.OutcomeUnknown}[p.outcome]
	if p.state == want {
		return p.outcome != "lost" || p.code == "result_lost"
	}
	return p.cancel && p.canceledBeforeTheEnd && p.state == operation.Canceled
}

type driver struct {
	opts    Options
	rec     *linearize.Recorder
	client  *http.Client
	fiveXX  atomic.Int64
	mu      sync.Mutex
	plans   []*plan
	kills   []kill
	samples []float64
	backlog int
	start   time.Time
}

type kill struct {
	at       time.Time
	function string
}

// Run drives the stack as opts say and reports. ctx bounds it all.
func Run(ctx context.Context, opts Options) (Report, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	d := &driver{opts: opts, rec: linearize.NewRecorder(nil), client: opts.Client, start: time.Now()}
	if d.client == nil {
		d.client = &http.Client{Timeout: 30 * time.Second}
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5ca1e))
	loadCtx, stopLoad := context.WithTimeout(ctx, opts.Duration)
	defer stopLoad()
	var bg sync.WaitGroup
	bgCtx, stopBG := context.WithCancel(ctx)
	defer stopBG()
	bg.Add(2)
	go func() { defer bg.Done(); d.sample(bgCtx) }()
	go func() { defer bg.Done(); d.chaos(bgCtx, rand.New(rand.NewPCG(opts.Seed+1, 7))) }()

	var ops sync.WaitGroup
	every := time.Duration(float64(time.Second) / opts.Rate)
	tick := time.NewTicker(every)
	n := 0
admit:
	for {
		select {
		case <-loadCtx.Done():
			break admit
		case <-tick.C:
		}
		p := d.newPlan(n, rng)
		n++
		d.mu.Lock()
		d.plans = append(d.plans, p)
		d.mu.Unlock()
		ops.Add(1)
		go func() { defer ops.Done(); d.follow(ctx, p, rand.New(rand.NewPCG(opts.Seed, uint64(p.n)))) }()
	}
	tick.Stop()
	loadEnd := time.Now()
	opts.Log.Info("load over; draining", "operations", n)
	done := make(chan struct{})
	go func() { ops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(opts.Drain):
		opts.Log.Warn("drain bound reached", "bound", opts.Drain)
	case <-ctx.Done():
	}
	drain := time.Since(loadEnd)
	stopBG()
	bg.Wait()
	return d.report(drain)
}

func (d *driver) newPlan(n int, rng *rand.Rand) *plan {
	o := d.opts
	p := &plan{n: n, token: o.Tokens[n%len(o.Tokens)], key: fmt.Sprintf("scale-%d-%d", d.start.UnixNano(), n), outcome: "succeed"}
	switch r := rng.Float64(); {
	case r < o.Lost:
		p.outcome = "lost"
	case r < o.Lost+o.Fails:
		p.outcome = "fail"
	}
	p.duplicate = rng.Float64() < o.Duplicates
	p.cancel = rng.Float64() < o.Cancels
	wait := rng.Float64() < o.Waits
	steps := o.Steps
	if p.cancel {
		steps = max(steps, 3) // room to be cancelled mid-step
	}
	p.body = fmt.Sprintf(`{"type":"scale.task","input":{"name":"%s-%d","steps":%d,"sleepMs":%d,"wait":%t,"outcome":"%s"}}`,
		p.key, n, steps, o.SleepMs, wait, p.outcome)
	return p
}

// follow is one client's life with one operation: admit it (again with the same key while
// the answer is unknown, and once more when the plan sends it twice), cancel it once it
// runs when the plan says so, and poll it to its end.
func (d *driver) follow(ctx context.Context, p *plan, rng *rand.Rand) {
	id := ""
	for attempt := 0; id == ""; attempt++ {
		if ctx.Err() != nil {
			return
		}
		if attempt > 0 {
			sleep(ctx, backoff(attempt, rng))
		}
		id = d.create(ctx, p)
	}
	d.mu.Lock()
	p.id, p.admittedAt = id, time.Now()
	d.mu.Unlock()
	if p.duplicate {
		d.create(ctx, p) // a client's retry of a request whose answer it already had
	}
	wait, cancelled := time.Second, false
	for polls := 0; ctx.Err() == nil; polls++ {
		sleep(ctx, wait)
		rep, status, retryAfter := d.get(ctx, p)
		switch {
		case status == http.StatusOK && (rep.Terminal || rep.State == operation.OutcomeUnknown):
			// outcome_unknown is not terminal (an operator settles it), but nothing more
			// happens by itself: the client has its answer.
			d.mu.Lock()
			p.state, p.endedAt = rep.State, time.Now()
			if rep.Problem != nil {
				p.code = rep.Problem.Code
			}
			d.mu.Unlock()
			return
		case status == http.StatusOK && p.cancel && !cancelled && rep.State == operation.Running:
			cancelled = d.cancel(ctx, p, rep.Version)
		}
		// A client that polls for long backs off, up to 10 s; the server's Retry-After is a floor.
		wait = min(max(retryAfter, wait+wait/4), 10*time.Second)
	}
}

type representation struct {
	OperationID string          `json:"operationId"`
	State       operation.State `json:"state"`
	Version     int             `json:"version"`
	Terminal    bool            `json:"terminal"`
	Problem     *struct {
		Code problem.Code `json:"code"`
	} `json:"problem"`
	Code problem.Code `json:"code"` // a problem body's
}

func (d *driver) create(ctx context.Context, p *plan) string {
	call := d.rec.Begin(linearize.Input{Kind: linearize.Create, Key: p.token + "/" + p.key})
	resp, body, err := d.send(ctx, http.MethodPost, "/v1/operations", p.token, map[string]string{"Idempotency-Key": p.key}, p.body)
	out := linearize.Output{}
	if err == nil {
		var r representation
		_ = json.Unmarshal(body, &r)
		out = linearize.Output{Status: resp.StatusCode, Code: r.Code, OperationID: r.OperationID,
			Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	}
	call.End(out)
	if out.Status == http.StatusAccepted {
		return out.OperationID
	}
	return ""
}

func (d *driver) get(ctx context.Context, p *plan) (representation, int, time.Duration) {
	call := d.rec.Begin(linearize.Input{Kind: linearize.Get, OperationID: p.id})
	resp, body, err := d.send(ctx, http.MethodGet, "/v1/operations/"+p.id, p.token, nil, "")
	var r representation
	out := linearize.Output{}
	retryAfter := time.Second
	if err == nil {
		_ = json.Unmarshal(body, &r)
		out = linearize.Output{Status: resp.StatusCode, Code: r.Code}
		if resp.StatusCode == http.StatusOK {
			out.OperationID, out.State, out.Version, out.Terminal = r.OperationID, r.State, r.Version, r.Terminal
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
	}
	call.End(out)
	if err != nil {
		return r, 0, retryAfter
	}
	return r, resp.StatusCode, retryAfter
}

// cancel asks, with the version it saw, for the operation to stop; it reports whether the
// request was answered (a 202 or 412: either way the client stops asking).
func (d *driver) cancel(ctx context.Context, p *plan, version int) bool {
	call := d.rec.Begin(linearize.Input{Kind: linearize.Cancel, OperationID: p.id, IfMatch: version})
	resp, body, err := d.send(ctx, http.MethodPost, "/v1/operations/"+p.id+"/cancel", p.token,
		map[string]string{"If-Match": fmt.Sprintf(`"%d"`, version)}, "")
	out := linearize.Output{}
	if err == nil {
		var r representation
		_ = json.Unmarshal(body, &r)
		out = linearize.Output{Status: resp.StatusCode, Code: r.Code}
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted {
			out.OperationID, out.State, out.Version, out.Terminal = r.OperationID, r.State, r.Version, r.Terminal
		}
	}
	call.End(out)
	if err != nil {
		return false
	}
	if resp.StatusCode == http.StatusAccepted {
		d.mu.Lock()
		p.canceledBeforeTheEnd = true
		d.mu.Unlock()
	}
	return resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusPreconditionFailed ||
		resp.StatusCode == http.StatusConflict
}

func (d *driver) send(ctx context.Context, method, path, token string, headers map[string]string, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.opts.API+path, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 500 {
		d.fiveXX.Add(1)
	}
	return resp, bytes.Clone(out), nil
}

// sample reads, once a second, how many Lambda slots are in use per step in flight (the
// recorder's and the worker's invocations over the worker's), and how many admitted
// operations have not been seen running or ended (the backlog).
func (d *driver) sample(ctx context.Context) {
	lastLog := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.opts.Slots != nil {
			in := d.opts.Slots()
			if w := in[d.opts.Worker]; w > 0 {
				d.mu.Lock()
				d.samples = append(d.samples, float64(w+in[d.opts.Recorder])/float64(w))
				d.mu.Unlock()
			}
		}
		d.mu.Lock()
		open, ended := 0, 0
		for _, p := range d.plans {
			switch {
			case p.id != "" && p.endedAt.IsZero():
				open++
			case !p.endedAt.IsZero():
				ended++
			}
		}
		d.backlog = max(d.backlog, open)
		d.mu.Unlock()
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			d.opts.Log.Info("progress", "open", open, "ended", ended, "5xx", d.fiveXX.Load())
		}
	}
}

// chaos kills a random function's process every KillEvery.
func (d *driver) chaos(ctx context.Context, rng *rand.Rand) {
	if d.opts.Kill == nil || d.opts.KillEvery <= 0 || len(d.opts.Functions) == 0 {
		return
	}
	t := time.NewTicker(d.opts.KillEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn := d.opts.Functions[rng.IntN(len(d.opts.Functions))]
		if err := d.opts.Kill(fn); err != nil {
			d.opts.Log.Warn("kill", "function", fn, "error", err.Error())
			continue
		}
		d.mu.Lock()
		d.kills = append(d.kills, kill{at: time.Now(), function: fn})
		d.mu.Unlock()
	}
}

// killReach is how long before an operation's admission a kill of the worker can still
// cost it a step (the step's timeout and then some).
const killReach = 15 * time.Second

// killedWorkerDuring says whether the worker's process was killed while p ran.
func (d *driver) killedWorkerDuring(p *plan) bool {
	for _, k := range d.kills {
		// From shortly before the admission: the emulator may hand a step to the killed
		// process's last long poll, which never answers.
		if k.function == d.opts.Worker && k.at.After(p.admittedAt.Add(-killReach)) && k.at.Before(p.endedAt) {
			return true
		}
	}
	return false
}

func (d *driver) report(drain time.Duration) (Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := Report{Drain: drain, FiveXX: int(d.fiveXX.Load()), BacklogPeak: d.backlog, Kills: map[string]int{}, ByState: map[operation.State]int{}}
	for _, k := range d.kills {
		r.Kills[k.function]++
	}
	var latencies []time.Duration
	for _, p := range d.plans {
		if p.id == "" {
			continue // never admitted: the load ended first
		}
		r.Admitted++
		if p.endedAt.IsZero() {
			r.Lost++
			r.Wrong = append(r.Wrong, fmt.Sprintf("%s: not ended", p.id))
			continue
		}
		r.Terminal++
		r.ByState[p.state]++
		latencies = append(latencies, p.endedAt.Sub(p.admittedAt))
		switch {
		case p.expected():
		case p.state == operation.OutcomeUnknown && (p.code == "worker_error" || p.code == "step_timeout") && d.killedWorkerDuring(p):
			// The worker's process died mid-step: Lambda reports the crash (worker_error); the
			// local emulator may instead leave the invocation to its timeout (step_timeout).
			r.KillUnknown++
		default:
			r.Misclassified++
			if len(r.Wrong) < 20 {
				r.Wrong = append(r.Wrong, fmt.Sprintf("%s: %s (%s), planned %s, cancel %v", p.id, p.state, p.code, p.outcome, p.cancel))
			}
		}
	}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		r.P50 = latencies[len(latencies)/2]
		r.P99 = latencies[min(len(latencies)-1, len(latencies)*99/100)]
	}
	if len(d.samples) > 0 {
		sum := 0.0
		for _, s := range d.samples {
			sum += s
		}
		r.SlotsPerStep = sum / float64(len(d.samples))
	}
	history := d.rec.History()
	r.Calls = len(history)
	res, err := linearize.Check(history, 5*time.Minute)
	if err != nil {
		return r, fmt.Errorf("scale: the history: %w", err)
	}
	r.Linearizable = res.Linearizable
	if !res.Linearizable {
		for _, v := range res.Violations {
			if len(r.Wrong) < 40 {
				r.Wrong = append(r.Wrong, fmt.Sprintf("not linearizable: %+v", v))
			}
		}
	}
	return r, nil
}

func backoff(attempt int, rng *rand.Rand) time.Duration {
	ceiling := min(time.Duration(1<<min(attempt, 5))*250*time.Millisecond, 8*time.Second)
	return time.Duration(rng.Int64N(int64(ceiling))) + 100*time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
