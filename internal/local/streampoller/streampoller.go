// Package streampoller emulates a Lambda event source mapping on a DynamoDB stream for the
// local stack: it reads DynamoDB Local's stream, applies the mapping's filter, invokes the
// function with batches shaped like Lambda's DynamoDBEvent, honours partial batch failures,
// bisects failing batches, bounds retries and sends a description of an exhausted batch to
// the on-failure destination — with the settings of internal/aws/eventsource that CDK uses too.
package streampoller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/longrun-dev/longrun/internal/aws/eventsource"
	"github.com/longrun-dev/longrun/internal/local/eventfilter"
)

// Invoker invokes a function synchronously and returns its payload and, when the function
// failed, its error kind (Lambda's X-Amz-Function-Error).
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) (out []byte, functionError string, err error)
}

// Poller runs one mapping.
type Poller struct {
	Endpoint  string // DynamoDB Local, which serves the Streams API on the same port
	StreamARN string
	Mapping   eventsource.Mapping
	Invoker   Invoker
	// OnFailure receives the description of a batch whose retries are exhausted.
	OnFailure func(ctx context.Context, body []byte) error
	// Interval is how long an idle shard waits before it is read again: the latency the
	// emulation adds that AWS's own pollers (about 4 reads a second per shard) also add.
	Interval time.Duration
	// Backoff is the delay before retrying a failed batch (doubled per attempt).
	Backoff time.Duration
	Log     *slog.Logger
	HTTP    *http.Client
	// Paused, when set and true, holds delivery: records wait in the stream, as when a
	// mapping is disabled. Tests use it to stage crashes and redeliveries.
	Paused func() bool

	filter *eventfilter.Pattern
}

// record is one stream record, kept as raw JSON so it reaches the function exactly as
// DynamoDB Streams wrote it, plus the fields the poller itself needs.
type record struct {
	raw      json.RawMessage
	sequence string
}

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context) error {
	filter, err := eventfilter.Compile(p.Mapping.Filter)
	if err != nil {
		return err
	}
	p.filter = filter
	if p.HTTP == nil {
		p.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	iterators := map[string]string{} // shard → next iterator ("" when the shard is closed)
	var discovered time.Time
	for {
		if p.Paused != nil && p.Paused() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(p.Interval):
				continue
			}
		}
		// Shards change rarely (DynamoDB rolls them over every few hours): describe the
		// stream now and then, not on every read.
		if time.Since(discovered) >= discoverEvery {
			if err := p.discover(ctx, iterators); err != nil && ctx.Err() == nil {
				p.Log.WarnContext(ctx, "describe stream", "error", err.Error())
			} else {
				discovered = time.Now()
			}
		}
		busy := false
		for shard, it := range iterators {
			if it == "" {
				continue
			}
			n, next, err := p.readShard(ctx, shard, it)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				p.Log.WarnContext(ctx, "read shard", "shard", shard, "error", err.Error())
				continue
			}
			iterators[shard] = next
			busy = busy || n > 0
		}
		if busy {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.Interval):
		}
	}
}

// discoverEvery is how often the poller looks for new shards.
const discoverEvery = 5 * time.Second

// discover adds shards not seen yet, reading each from the mapping's starting position.
func (p *Poller) discover(ctx context.Context, iterators map[string]string) error {
	var desc struct {
		StreamDescription struct {
			Shards []struct{ ShardId string }
		}
	}
	if err := p.call(ctx, "DescribeStream", map[string]any{"StreamArn": p.StreamARN}, &desc); err != nil {
		return err
	}
	for _, s := range desc.StreamDescription.Shards {
		if _, seen := iterators[s.ShardId]; seen {
			continue
		}
		var it struct{ ShardIterator string }
		if err := p.call(ctx, "GetShardIterator", map[string]any{"StreamArn": p.StreamARN, "ShardId": s.ShardId,
			"ShardIteratorType": p.Mapping.StartingPosition}, &it); err != nil {
			return err
		}
		iterators[s.ShardId] = it.ShardIterator
	}
	return nil
}

// readShard reads what the shard has, delivers it in batches, and returns how many records
// it read and the iterator to continue from.
func (p *Poller) readShard(ctx context.Context, shard, iterator string) (int, string, error) {
	var out struct {
		Records           []json.RawMessage
		NextShardIterator *string
	}
	if err := p.call(ctx, "GetRecords", map[string]any{"ShardIterator": iterator, "Limit": 1000}, &out); err != nil {
		return 0, iterator, err
	}
	if p.Paused != nil && p.Paused() {
		// Paused while reading: keep the iterator, so these records are read again on resume.
		return 0, iterator, nil
	}
	var matched []record
	for _, raw := range out.Records {
		if !p.filter.Match(raw) {
			continue // filtered records never reach the function, as on AWS
		}
		var r struct {
			Dynamodb struct{ SequenceNumber string }
		}
		_ = json.Unmarshal(raw, &r)
		matched = append(matched, record{raw: p.withSource(raw), sequence: r.Dynamodb.SequenceNumber})
	}
	for len(matched) > 0 {
		n := min(len(matched), p.Mapping.BatchSize)
		p.deliver(ctx, shard, matched[:n])
		matched = matched[n:]
	}
	next := ""
	if out.NextShardIterator != nil {
		next = *out.NextShardIterator
	}
	return len(out.Records), next, nil
}

// withSource adds eventSourceARN, which Lambda's records carry and the Streams API's do not.
func (p *Poller) withSource(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	m["eventSourceARN"], _ = json.Marshal(p.StreamARN)
	out, _ := json.Marshal(m)
	return out
}

// deliver invokes the function with batch until it succeeds, retrying only from the first
// record the function reports failed, bisecting on function errors, and giving up after
// MaxRetries with a message to the on-failure destination. The shard waits meanwhile, as
// on AWS, so records are handled in order.
func (p *Poller) deliver(ctx context.Context, shard string, batch []record) {
	for attempt := 0; len(batch) > 0; attempt++ {
		if attempt > p.Mapping.MaxRetries {
			p.exhausted(ctx, shard, batch, attempt)
			return
		}
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.Backoff << min(attempt-1, 6)):
			}
		}
		failed, fnErr, err := p.invoke(ctx, batch)
		switch {
		case err != nil || fnErr != "":
			p.Log.WarnContext(ctx, "batch failed", "function", p.Mapping.Function, "records", len(batch), "attempt", attempt,
				"function_error", fnErr, "error", errString(err))
			if p.Mapping.BisectOnError && len(batch) > 1 {
				half := len(batch) / 2
				p.deliver(ctx, shard, batch[:half])
				p.deliver(ctx, shard, batch[half:])
				return
			}
		case len(failed) == 0:
			return
		default:
			batch = fromFirstFailure(batch, failed)
		}
	}
}

func (p *Poller) invoke(ctx context.Context, batch []record) (failed []string, fnErr string, err error) {
	records := make([]json.RawMessage, len(batch))
	for i, r := range batch {
		records[i] = r.raw
	}
	payload, _ := json.Marshal(map[string]any{"Records": records})
	out, fnErr, err := p.Invoker.Invoke(ctx, p.Mapping.Function, payload)
	if err != nil || fnErr != "" || !p.Mapping.ReportBatchItemFailures {
		return nil, fnErr, err
	}
	var resp struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	if len(bytes.TrimSpace(out)) > 0 && !bytes.Equal(bytes.TrimSpace(out), []byte("null")) {
		if err := json.Unmarshal(out, &resp); err != nil {
			return nil, "", fmt.Errorf("function response is not a batch response: %w", err)
		}
	}
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed, "", nil
}

// fromFirstFailure returns the batch from the lowest failed sequence number on: AWS retries
// from there (records before it are checkpointed). An unknown identifier fails the whole
// batch, as on AWS.
func fromFirstFailure(batch []record, failed []string) []record {
	sort.Slice(failed, func(i, j int) bool { return lessSeq(failed[i], failed[j]) })
	for i, r := range batch {
		if r.sequence == failed[0] {
			return batch[i:]
		}
	}
	return batch
}

// lessSeq compares sequence numbers, which are decimal strings of varying length.
func lessSeq(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (p *Poller) exhausted(ctx context.Context, shard string, batch []record, attempts int) {
	info := map[string]any{
		"requestContext": map[string]any{"condition": "RetryAttemptsExhausted", "approximateInvokeCount": attempts,
			"functionArn": p.Mapping.Function},
		"version":   "1.0",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": map[string]any{
			"shardId": shard, "streamArn": p.StreamARN, "batchSize": len(batch),
			"startSequenceNumber": batch[0].sequence, "endSequenceNumber": batch[len(batch)-1].sequence,
		},
	}
	body, _ := json.Marshal(info)
	p.Log.ErrorContext(ctx, "retries exhausted; batch sent to the on-failure destination", "function", p.Mapping.Function, "records", len(batch))
	if p.OnFailure != nil {
		if err := p.OnFailure(ctx, body); err != nil {
			p.Log.ErrorContext(ctx, "on-failure destination", "error", err.Error())
		}
	}
}

// call makes one DynamoDB Streams API call. DynamoDB Local does not check signatures; the
// poller only ever talks to it (on AWS, Lambda's own pollers do this job).
func (p *Poller) call(ctx context.Context, action string, in, out any) error {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810."+action)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", action, resp.StatusCode, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
