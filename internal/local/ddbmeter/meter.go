package ddbmeter

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/longrun-dev/longrun/internal/local/ddbwire"
)

// Meter is an http.Handler in front of a DynamoDB endpoint (DynamoDB Local): it forwards
// every call unchanged and adds up what each would consume on DynamoDB. To know the sizes,
// it reads each written item (consistently, uncounted) before and after the write, each read
// item in full, and a Query or Scan again without its filter or projection (DynamoDB bills
// what it evaluated, not what it returned). Writes run one at a time, so the reads around a
// write see only its own change; reads run beside each other but never beside a write.
// DynamoDB Local serves one request at a time anyway.
type Meter struct {
	upstream *url.URL
	client   *http.Client
	now      func() time.Time

	order sync.RWMutex // writes exclusive

	mu     sync.Mutex
	tables map[string]*Table
	totals Totals
}

// Totals is what the calls metered so far consume.
type Totals struct {
	Usage  Usage            `json:"usage"`
	Calls  map[string]int   `json:"calls"`  // by operation; Streams and table management calls are free
	ByCall map[string]Usage `json:"byCall"` // by operation
	// Unpriced counts calls the meter could not price (reading their items failed): when it
	// is not zero the figures are low.
	Unpriced int `json:"unpriced"`
	// Overhead is the time the meter's own reads added to the calls: the callers' durations
	// include it. (Waiting for the write before is not counted: DynamoDB Local serves one
	// request at a time anyway.)
	Overhead time.Duration `json:"overheadNs"`
	// ByCaller and OverheadByCaller are the same by caller: the application its SDK names in
	// the User-Agent (app/<id>, AWS_SDK_UA_APP_ID), "" when it names none.
	ByCaller         map[string]Usage         `json:"byCaller"`
	OverheadByCaller map[string]time.Duration `json:"overheadByCallerNs"`
}

// Caller is the application an AWS SDK request names in its User-Agent (app/<id>), "" when
// it names none.
func Caller(r *http.Request) string {
	for _, token := range strings.Fields(r.Header.Get("User-Agent")) {
		if id, ok := strings.CutPrefix(token, "app/"); ok {
			return id
		}
	}
	return ""
}

// New returns a Meter forwarding to upstream, e.g. http://127.0.0.1:8000. now is its clock,
// nil for the wall clock.
func New(upstream string, now func() time.Time) (*Meter, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("ddbmeter: upstream %q: want an http URL (%v)", upstream, err)
	}
	if now == nil {
		now = time.Now
	}
	m := &Meter{upstream: u, now: now, tables: map[string]*Table{},
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}}
	m.Reset()
	return m, nil
}

// Totals returns what was metered since New or the last Reset.
func (m *Meter) Totals() Totals {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.totals
	t.Calls, t.ByCall = maps.Clone(t.Calls), maps.Clone(t.ByCall)
	t.ByCaller, t.OverheadByCaller = maps.Clone(t.ByCaller), maps.Clone(t.OverheadByCaller)
	return t
}

// Reset starts the count again.
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals = Totals{Calls: map[string]int{}, ByCall: map[string]Usage{}, ByCaller: map[string]Usage{},
		OverheadByCaller: map[string]time.Duration{}}
}

func (m *Meter) add(op, caller string, u Usage, unpriced bool, overhead time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals.Calls[op]++
	m.totals.ByCall[op] = m.totals.ByCall[op].Plus(u)
	m.totals.ByCaller[caller] = m.totals.ByCaller[caller].Plus(u)
	m.totals.Usage = m.totals.Usage.Plus(u)
	m.totals.Overhead += overhead
	m.totals.OverheadByCaller[caller] += overhead
	if unpriced {
		m.totals.Unpriced++
	}
}

func (m *Meter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op, ok := ddbwire.Operation(r)
	var resp *answer
	var u Usage
	var overhead time.Duration
	var priceErr error
	switch {
	case !ok: // DynamoDB Streams (reads by Lambda's pollers are free) or anything else
		resp, err = m.forward(r, body)
		op = strings.TrimPrefix(r.Header.Get("X-Amz-Target"), ddbwire.StreamsPrefix)
	case op == "PutItem" || op == "UpdateItem" || op == "DeleteItem" || op == "BatchWriteItem" || op == "TransactWriteItems":
		resp, u, overhead, priceErr, err = m.write(r, op, body)
	case op == "GetItem" || op == "BatchGetItem" || op == "TransactGetItems":
		resp, u, overhead, priceErr, err = m.readKeys(r, op, body)
	case op == "Query" || op == "Scan":
		resp, u, overhead, priceErr, err = m.query(r, op, body)
	default: // table management: free
		resp, err = m.forward(r, body)
	}
	if err != nil {
		http.Error(w, "ddbmeter: "+err.Error(), http.StatusBadGateway)
		return
	}
	m.add(op, Caller(r), u, priceErr != nil, overhead)
	resp.write(w)
}

// answer is an upstream response, held whole so the meter can read it before passing it on.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a *answer) write(w http.ResponseWriter) {
	maps.Copy(w.Header(), a.header)
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// errorType is the error's name ("ConditionalCheckFailedException"), "" for a success.
func (a *answer) errorType() string {
	if a.status == http.StatusOK {
		return ""
	}
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(a.body, &e)
	if _, name, ok := strings.Cut(e.Type, "#"); ok {
		return name
	}
	if e.Type == "" {
		return "Unknown"
	}
	return e.Type
}

func (m *Meter) forward(r *http.Request, body []byte) (*answer, error) {
	up, err := ddbwire.Forward(r, m.upstream, body)
	if err != nil {
		return nil, err
	}
	return m.send(up)
}

// send sends up to DynamoDB Local and reads its whole answer.
func (m *Meter) send(up *http.Request) (*answer, error) {
	resp, err := m.client.Do(up)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// call sends one request of the meter's own, with the caller's credentials (DynamoDB Local
// without -sharedDb keeps a database per access key and region).
func (m *Meter) call(r *http.Request, op string, in any) ([]byte, error) {
	up, err := ddbwire.Call(r.Context(), r, m.upstream, op, in)
	if err != nil {
		return nil, err
	}
	a, err := m.send(up)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("ddbmeter: %s: %d %.300s", op, a.status, a.body)
	}
	return a.body, nil
}

// table returns a table's shape, asking DescribeTable once per table.
func (m *Meter) table(r *http.Request, name string) (*Table, error) {
	m.mu.Lock()
	t, ok := m.tables[name]
	m.mu.Unlock()
	if ok {
		return t, nil
	}
	b, err := m.call(r, "DescribeTable", map[string]string{"TableName": name})
	if err != nil {
		return nil, err
	}
	t, err = ParseDescribeTable(b)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.tables[name] = t
	m.mu.Unlock()
	return t, nil
}

// target is one item a call addresses.
type target struct {
	table *Table
	key   Item
	check bool // a ConditionCheck
}

func (t target) id() string { return itemID(t.table.Name, t.key) }

func itemID(table string, key Item) string {
	b, _ := json.Marshal(key) // map keys in order: one string per key
	return table + "\x00" + string(b)
}

type tableKey struct {
	TableName string
	Key       Item
	Item      Item // a Put's item, whose key it is
}

// writeTargets lists the items a write call addresses.
func (m *Meter) writeTargets(r *http.Request, op string, body []byte) ([]target, error) {
	var refs []tableKey
	var checks []bool
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		var in tableKey
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		refs, checks = append(refs, in), append(checks, false)
	case "BatchWriteItem":
		var in struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item Item }
				DeleteRequest *struct{ Key Item }
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for name, reqs := range in.RequestItems {
			for _, q := range reqs {
				ref := tableKey{TableName: name}
				if q.PutRequest != nil {
					ref.Item = q.PutRequest.Item
				} else if q.DeleteRequest != nil {
					ref.Key = q.DeleteRequest.Key
				}
				refs, checks = append(refs, ref), append(checks, false)
			}
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct {
				Put, Update, Delete, ConditionCheck *tableKey
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		for _, ti := range in.TransactItems {
			for _, ref := range []*tableKey{ti.Put, ti.Update, ti.Delete} {
				if ref != nil {
					refs, checks = append(refs, *ref), append(checks, false)
				}
			}
			if ti.ConditionCheck != nil {
				refs, checks = append(refs, *ti.ConditionCheck), append(checks, true)
			}
		}
	}
	targets := make([]target, len(refs))
	for i, ref := range refs {
		t, err := m.table(r, ref.TableName)
		if err != nil {
			return nil, err
		}
		key := ref.Key
		if ref.Item != nil {
			key = t.Key(ref.Item)
		}
		targets[i] = target{table: t, key: key, check: checks[i]}
	}
	return targets, nil
}

// fetch reads targets' items whole, consistently, in BatchGetItem calls of at most 100 keys.
// An absent item is missing from the answer.
func (m *Meter) fetch(r *http.Request, targets []target) (map[string]Item, error) {
	found := map[string]Item{}
	seen := map[string]bool{}
	var pending []target
	for _, t := range targets {
		if !seen[t.id()] {
			seen[t.id()] = true
			pending = append(pending, t)
		}
	}
	tables := map[string]*Table{}
	for len(pending) > 0 {
		n := min(len(pending), 100)
		req := map[string]map[string]any{}
		for _, t := range pending[:n] {
			tables[t.table.Name] = t.table
			if req[t.table.Name] == nil {
				req[t.table.Name] = map[string]any{"ConsistentRead": true, "Keys": []Item{}}
			}
			req[t.table.Name]["Keys"] = append(req[t.table.Name]["Keys"].([]Item), t.key)
		}
		pending = pending[n:]
		for len(req) > 0 {
			b, err := m.call(r, "BatchGetItem", map[string]any{"RequestItems": req})
			if err != nil {
				return nil, err
			}
			var out struct {
				Responses       map[string][]Item
				UnprocessedKeys map[string]map[string]any
			}
			if err := json.Unmarshal(b, &out); err != nil {
				return nil, err
			}
			for name, items := range out.Responses {
				for _, it := range items {
					found[itemID(name, tables[name].Key(it))] = it
				}
			}
			req = out.UnprocessedKeys
		}
	}
	return found, nil
}

// write forwards a write call between reads of its items before and after, and prices it.
func (m *Meter) write(r *http.Request, op string, body []byte) (_ *answer, _ Usage, overhead time.Duration, priceErr, err error) {
	m.order.Lock()
	defer m.order.Unlock()
	start := m.now()
	targets, priceErr := m.writeTargets(r, op, body)
	var before map[string]Item
	if priceErr == nil {
		before, priceErr = m.fetch(r, targets)
	}
	overhead = m.now().Sub(start)
	resp, err := m.forward(r, body)
	if err != nil || priceErr != nil {
		return resp, Usage{}, overhead, priceErr, err
	}
	var u Usage
	switch name := resp.errorType(); {
	case name == "":
		start := m.now()
		after, err := m.fetch(r, targets)
		overhead += m.now().Sub(start)
		if err != nil {
			return resp, Usage{}, overhead, err, nil
		}
		for _, t := range targets {
			u = u.Plus(t.table.WriteUsage(Write{Before: before[t.id()], After: after[t.id()],
				Transactional: op == "TransactWriteItems", Check: t.check}))
		}
	case name == "ConditionalCheckFailedException" || name == "TransactionCanceledException":
		// Nothing was written; each item costs what its existing version does.
		for _, t := range targets {
			u = u.Plus(t.table.WriteUsage(Write{Before: before[t.id()], Failed: true,
				Transactional: op == "TransactWriteItems", Check: t.check}))
		}
	}
	// Any other error (validation, a missing table) is refused before anything is read.
	return resp, u, overhead, nil, nil
}

// readKeys forwards a read by key and prices it from the items' whole sizes.
func (m *Meter) readKeys(r *http.Request, op string, body []byte) (_ *answer, _ Usage, overhead time.Duration, priceErr, err error) {
	m.order.RLock()
	defer m.order.RUnlock()
	resp, err := m.forward(r, body)
	if err != nil || resp.errorType() != "" {
		return resp, Usage{}, 0, nil, err
	}
	type read struct {
		targets     []target
		consistency Consistency
	}
	var reads []read
	ref := func(name string, key Item) (target, error) {
		t, err := m.table(r, name)
		return target{table: t, key: key}, err
	}
	consistency := func(strong bool) Consistency {
		if strong {
			return Strong
		}
		return Eventual
	}
	switch op {
	case "GetItem":
		var in struct {
			TableName      string
			Key            Item
			ConsistentRead bool
		}
		if priceErr = json.Unmarshal(body, &in); priceErr == nil {
			var t target
			if t, priceErr = ref(in.TableName, in.Key); priceErr == nil {
				reads = append(reads, read{[]target{t}, consistency(in.ConsistentRead)})
			}
		}
	case "BatchGetItem":
		var in struct {
			RequestItems map[string]struct {
				Keys           []Item
				ConsistentRead bool
			}
		}
		if priceErr = json.Unmarshal(body, &in); priceErr == nil {
			for name, q := range in.RequestItems {
				rd := read{consistency: consistency(q.ConsistentRead)}
				for _, k := range q.Keys {
					var t target
					if t, priceErr = ref(name, k); priceErr != nil {
						break
					}
					rd.targets = append(rd.targets, t)
				}
				reads = append(reads, rd)
			}
		}
	case "TransactGetItems":
		var in struct {
			TransactItems []struct{ Get tableKey }
		}
		if priceErr = json.Unmarshal(body, &in); priceErr == nil {
			rd := read{consistency: Transactional}
			for _, g := range in.TransactItems {
				var t target
				if t, priceErr = ref(g.Get.TableName, g.Get.Key); priceErr != nil {
					break
				}
				rd.targets = append(rd.targets, t)
			}
			reads = append(reads, rd)
		}
	}
	if priceErr != nil {
		return resp, Usage{}, 0, priceErr, nil
	}
	start := m.now()
	var u Usage
	for _, rd := range reads {
		items, err := m.fetch(r, rd.targets)
		if err != nil {
			return resp, Usage{}, m.now().Sub(start), err, nil
		}
		sizes := make([]int, len(rd.targets))
		for i, t := range rd.targets {
			sizes[i] = Size(items[t.id()]) // 0 for an absent item: still a unit
		}
		u = u.Plus(ReadUsage(Read{Sizes: sizes, Consistency: rd.consistency}))
	}
	return resp, u, m.now().Sub(start), nil, nil
}

var placeholder = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// query forwards a Query or Scan and prices it from the items it evaluated: the same call
// again, without the filter and the projection, whose items are summed.
func (m *Meter) query(r *http.Request, op string, body []byte) (_ *answer, _ Usage, overhead time.Duration, priceErr, err error) {
	m.order.RLock()
	defer m.order.RUnlock()
	resp, err := m.forward(r, body)
	if err != nil || resp.errorType() != "" {
		return resp, Usage{}, 0, nil, err
	}
	start := m.now()
	defer func() { overhead = m.now().Sub(start) }()
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		return resp, Usage{}, 0, err, nil
	}
	var strong bool
	_ = json.Unmarshal(in["ConsistentRead"], &strong)
	_, index := in["IndexName"]
	for _, k := range []string{"FilterExpression", "ProjectionExpression", "Select", "AttributesToGet", "QueryFilter",
		"ScanFilter", "ConditionalOperator", "ReturnConsumedCapacity"} {
		delete(in, k)
	}
	in["Select"] = json.RawMessage(`"ALL_ATTRIBUTES"`)
	if index {
		in["Select"] = json.RawMessage(`"ALL_PROJECTED_ATTRIBUTES"`) // the index entries' sizes
	}
	// Placeholders only the filter or the projection used would now be refused as unused.
	var key string
	_ = json.Unmarshal(in["KeyConditionExpression"], &key)
	used := map[string]bool{}
	for _, p := range placeholder.FindAllString(key, -1) {
		used[p] = true
	}
	for _, field := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
		var vals map[string]json.RawMessage
		if json.Unmarshal(in[field], &vals) != nil {
			continue
		}
		maps.DeleteFunc(vals, func(k string, _ json.RawMessage) bool { return !used[k] })
		if len(vals) == 0 {
			delete(in, field)
			continue
		}
		in[field], _ = json.Marshal(vals)
	}
	b, err := m.call(r, op, in)
	if err != nil {
		return resp, Usage{}, 0, err, nil
	}
	var out struct{ Items []Item }
	if err := json.Unmarshal(b, &out); err != nil {
		return resp, Usage{}, 0, err, nil
	}
	sizes := make([]int, len(out.Items))
	for i, it := range out.Items {
		sizes[i] = Size(it)
	}
	c := Eventual
	if strong {
		c = Strong
	}
	return resp, ReadUsage(Read{Sizes: sizes, Consistency: c, Summed: true}), 0, nil, nil
}
