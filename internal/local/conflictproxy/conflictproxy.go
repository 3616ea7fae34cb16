// Package conflictproxy puts DynamoDB's transaction conflicts in front of DynamoDB Local.
//
// DynamoDB Local runs transactions one at a time and never refuses one; DynamoDB on AWS
// holds every item of a TransactWriteItems for the transaction's duration (~25 ms p50 for a
// few items) and refuses overlapping work on those items ("Transaction conflict handling"
// in the developer guide):
//   - a TransactWriteItems or TransactGetItems touching an item that another transaction in
//     flight holds is cancelled: TransactionCanceledException, with one cancellation reason
//     per item in request order, "TransactionConflict" for the held ones and "None" for the
//     rest;
//   - a PutItem, UpdateItem or DeleteItem on such an item fails with
//     TransactionConflictException.
//
// The proxy gives each TransactWriteItems a hold time drawn from [HoldMin, HoldMax]: it
// takes the items, waits, releases them and lets DynamoDB Local run it, so a reader sees the
// old state until the transaction commits, as on AWS. Everything else (reads, queries,
// streams, table management) passes through untouched. Latency makes it a slow store as well:
// every request it passes on waits that long first, as behind a loaded DynamoDB Local's queue. No hand-written emulator of DynamoDB
// semantics exists as a maintained library, hence this small one; it emulates only conflicts.
package conflictproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longrun-dev/longrun/internal/local/ddblocal"
	"github.com/longrun-dev/longrun/internal/local/ddbwire"
)

// Options configure a Proxy.
type Options struct {
	// Upstream is DynamoDB Local's endpoint, e.g. http://127.0.0.1:8000.
	Upstream string
	// Addr is where the proxy listens; "" is a free port on 127.0.0.1.
	Addr string
	// HoldMin and HoldMax bound how long a TransactWriteItems holds its items.
	HoldMin, HoldMax time.Duration
	// Seed seeds the hold-time draws, so a run can be repeated.
	Seed uint64
	// Latency is added to every request passed on to DynamoDB Local (after a transaction
	// released its items, so it makes the store slow without making conflicts likelier):
	// what a loaded machine does to DynamoDB Local, on purpose and the same every run. The
	// proxy's own refusals answer at once.
	Latency time.Duration
}

// Stats counts what the proxy did.
type Stats struct {
	Transactions     int64 // TransactWriteItems that held their items and ran
	Cancelled        int64 // transactions refused with TransactionConflict
	SingleConflicts  int64 // PutItem/UpdateItem/DeleteItem refused with TransactionConflictException
	TransactGetItems int64 // TransactGetItems refused with TransactionConflict
}

// Proxy is a running conflict-faithful front of DynamoDB Local.
type Proxy struct {
	// Endpoint is the proxy's URL, to use as the DynamoDB endpoint.
	Endpoint string

	opts     Options
	upstream *url.URL
	client   *http.Client
	srv      *http.Server
	ln       net.Listener

	mu     sync.Mutex
	held   map[string]uint64 // item → the transaction holding it
	nextTx uint64
	rng    *rand.Rand
	keys   map[string][]string // table → key attribute names

	transactions, cancelled, singles, gets atomic.Int64

	endHolds     chan struct{} // closed by EndHolds
	endHoldsOnce sync.Once
}

// Start listens and serves until Close.
func Start(opts Options) (*Proxy, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("conflictproxy: upstream %q is not a URL", opts.Upstream)
	}
	if opts.HoldMax < opts.HoldMin {
		return nil, fmt.Errorf("conflictproxy: HoldMax %s is below HoldMin %s", opts.HoldMax, opts.HoldMin)
	}
	if opts.Latency < 0 {
		return nil, fmt.Errorf("conflictproxy: Latency %s is negative", opts.Latency)
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("conflictproxy: listen: %w", err)
	}
	p := &Proxy{
		Endpoint: "http://" + ln.Addr().String(),
		opts:     opts, upstream: u, ln: ln,
		// At most ddblocal.MaxConns requests at DynamoDB Local: the others wait here, after
		// their conflicts were decided, instead of timing out on its table lock.
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ddblocal.MaxConns, MaxConnsPerHost: ddblocal.MaxConns}},
		held:   map[string]uint64{},
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		keys:   map[string][]string{},

		endHolds: make(chan struct{}),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// EndHolds ends every hold now, and makes every later one zero: a test that holds items
// for longer than it could ever need ends the hold once it has seen what it checks, rather
// than racing a clock that a loaded machine can outrun.
func (p *Proxy) EndHolds() { p.endHoldsOnce.Do(func() { close(p.endHolds) }) }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	return Stats{Transactions: p.transactions.Load(), Cancelled: p.cancelled.Load(),
		SingleConflicts: p.singles.Load(), TransactGetItems: p.gets.Load()}
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op, ok := ddbwire.Operation(r)
	if !ok {
		p.forward(w, r, body) // streams, or anything that is not the DynamoDB API
		return
	}
	switch op {
	case "TransactWriteItems":
		p.transactWrite(w, r, body)
	case "TransactGetItems":
		p.transactGet(w, r, body)
	case "PutItem", "UpdateItem", "DeleteItem":
		p.singleWrite(w, r, body)
	default:
		p.forward(w, r, body)
	}
}

// transactWrite holds the transaction's items for its duration, or cancels it when another
// transaction holds one of them.
func (p *Proxy) transactWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		TransactItems []map[string]struct {
			TableName string
			Key       map[string]json.RawMessage
			Item      map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		p.forward(w, r, body) // let DynamoDB Local answer the malformed request
		return
	}
	items := make([]string, len(in.TransactItems))
	for i, ti := range in.TransactItems {
		for _, action := range ti { // exactly one of Put, Update, Delete, ConditionCheck
			key := action.Key
			if action.Item != nil {
				names, err := p.keyNames(r, action.TableName)
				if err != nil {
					p.forward(w, r, body)
					return
				}
				key = pick(action.Item, names)
			}
			items[i] = itemID(action.TableName, key)
		}
	}
	tx, busy := p.acquire(items)
	if busy != nil {
		p.cancelled.Add(1)
		writeCancelled(w, busy)
		return
	}
	p.transactions.Add(1)
	hold := time.NewTimer(p.hold())
	select {
	case <-hold.C:
	case <-p.endHolds:
		hold.Stop()
	}
	// Release before DynamoDB Local runs it: the hold is the transaction's duration on AWS,
	// and DynamoDB Local's own queue (it runs one transaction at a time) is latency, not
	// contention. The order stays serializable: whatever takes an item next is sent at least
	// a hold later, and this transaction's caller sees it commit only after DynamoDB Local
	// ran it.
	p.release(items, tx)
	p.forward(w, r, body)
}

// transactGet is refused when a transaction in flight holds one of its items.
func (p *Proxy) transactGet(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		TransactItems []struct {
			Get struct {
				TableName string
				Key       map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(body, &in); err == nil {
		items := make([]string, len(in.TransactItems))
		for i, ti := range in.TransactItems {
			items[i] = itemID(ti.Get.TableName, ti.Get.Key)
		}
		if busy := p.heldAmong(items); busy != nil {
			p.gets.Add(1)
			writeCancelled(w, busy)
			return
		}
	}
	p.forward(w, r, body)
}

// singleWrite fails with TransactionConflictException when a transaction in flight holds
// its item. It holds nothing itself: DynamoDB Local applies it at once.
func (p *Proxy) singleWrite(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		TableName string
		Key       map[string]json.RawMessage
		Item      map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &in); err == nil {
		key := in.Key
		if in.Item != nil {
			if names, err := p.keyNames(r, in.TableName); err == nil {
				key = pick(in.Item, names)
			}
		}
		if busy := p.heldAmong([]string{itemID(in.TableName, key)}); busy != nil {
			p.singles.Add(1)
			writeError(w, "TransactionConflictException",
				"Transaction is ongoing for the item", nil)
			return
		}
	}
	p.forward(w, r, body)
}

// acquire takes every item for a new transaction, or, when any is held, takes none and
// returns which are (one flag per item).
func (p *Proxy) acquire(items []string) (uint64, []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if busy := p.heldLocked(items); busy != nil {
		return 0, busy
	}
	p.nextTx++
	for _, it := range items {
		p.held[it] = p.nextTx
	}
	return p.nextTx, nil
}

func (p *Proxy) release(items []string, tx uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range items {
		if p.held[it] == tx {
			delete(p.held, it)
		}
	}
}

func (p *Proxy) heldAmong(items []string) []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heldLocked(items)
}

func (p *Proxy) heldLocked(items []string) []bool {
	var busy []bool
	for i, it := range items {
		if _, ok := p.held[it]; ok {
			if busy == nil {
				busy = make([]bool, len(items))
			}
			busy[i] = true
		}
	}
	return busy
}

func (p *Proxy) hold() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	span := p.opts.HoldMax - p.opts.HoldMin
	if span <= 0 {
		return p.opts.HoldMin
	}
	return p.opts.HoldMin + time.Duration(p.rng.Int64N(int64(span)+1))
}

// keyNames returns a table's key attribute names, asking DynamoDB Local once per table with
// the caller's own headers (DynamoDB Local without -sharedDb keeps a database per
// credential).
func (p *Proxy) keyNames(r *http.Request, table string) ([]string, error) {
	p.mu.Lock()
	names, ok := p.keys[table]
	p.mu.Unlock()
	if ok {
		return names, nil
	}
	up, err := ddbwire.Call(r.Context(), r, p.upstream, "DescribeTable", map[string]string{"TableName": table})
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(up)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Table.KeySchema) == 0 {
		return nil, errors.Join(errors.New("conflictproxy: no key schema for "+table), err)
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	p.mu.Lock()
	p.keys[table] = names
	p.mu.Unlock()
	return names, nil
}

func pick(item map[string]json.RawMessage, names []string) map[string]json.RawMessage {
	key := make(map[string]json.RawMessage, len(names))
	for _, n := range names {
		key[n] = item[n]
	}
	return key
}

// itemID names an item by table and key. Attribute values arrive as DynamoDB JSON
// ({"S":"…"}); marshalling the map sorts its names, so equal keys give equal ids.
func itemID(table string, key map[string]json.RawMessage) string {
	compact := make(map[string]json.RawMessage, len(key))
	for k, v := range key {
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			v = b.Bytes()
		}
		compact[k] = v
	}
	b, _ := json.Marshal(compact)
	return table + "\x00" + string(b)
}

// forward sends the request to DynamoDB Local (after Latency) and copies its answer back.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	if p.opts.Latency > 0 {
		t := time.NewTimer(p.opts.Latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	up, err := ddbwire.Forward(r, p.upstream, body)
	if err != nil {
		writeError(w, "InternalServerError", err.Error(), nil)
		return
	}
	resp, err := p.client.Do(up)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	_ = ddbwire.CopyAnswer(w, resp)
}

// writeCancelled answers as DynamoDB does for a transaction cancelled by conflicts.
func writeCancelled(w http.ResponseWriter, busy []bool) {
	type reason struct {
		Code    string
		Message string `json:",omitempty"`
	}
	reasons := make([]reason, len(busy))
	codes := make([]string, len(busy))
	for i, b := range busy {
		reasons[i] = reason{Code: "None"}
		if b {
			reasons[i] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
		}
		codes[i] = reasons[i].Code
	}
	writeError(w, "TransactionCanceledException",
		"Transaction cancelled, please refer cancellation reasons for specific reasons ["+strings.Join(codes, ", ")+"]",
		map[string]any{"CancellationReasons": reasons})
}

// writeError writes a DynamoDB JSON-protocol error (HTTP 400, __type names the shape).
func writeError(w http.ResponseWriter, code, message string, extra map[string]any) {
	body := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": message}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}
