// Package ddbwire is DynamoDB's JSON wire protocol as the local proxies in front of DynamoDB
// Local (the conflict proxy, the cost meter) speak it: which operation a request calls, the
// request passed on, and a call of the proxy's own made as its caller.
package ddbwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

const (
	// TargetPrefix starts the X-Amz-Target of every DynamoDB API call.
	TargetPrefix = "DynamoDB_20120810."
	// StreamsPrefix starts the X-Amz-Target of every DynamoDB Streams call.
	StreamsPrefix = "DynamoDBStreams_20120810."
)

// Operation is the DynamoDB API operation r calls ("PutItem"); false for a DynamoDB Streams
// call or anything else.
func Operation(r *http.Request) (string, bool) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), TargetPrefix)
	if !ok {
		return "", false
	}
	return op, true
}

// Forward is r, whose body was read as body, sent on to upstream unchanged.
func Forward(r *http.Request, upstream *url.URL, body []byte) (*http.Request, error) {
	up, err := http.NewRequestWithContext(r.Context(), r.Method,
		upstream.ResolveReference(&url.URL{Path: r.URL.Path, RawQuery: r.URL.RawQuery}).String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	up.Header = r.Header.Clone()
	up.Header.Del("Content-Length")
	return up, nil
}

// Call is a request of the proxy's own, operation op with input in, made with caller's
// credentials: DynamoDB Local without -sharedDb keeps a database per access key and region,
// so the proxy must ask in its caller's.
func Call(ctx context.Context, caller *http.Request, upstream *url.URL, op string, in any) (*http.Request, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, upstream.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := caller.Header.Get(h); v != "" {
			up.Header.Set(h, v)
		}
	}
	up.Header.Set("Content-Type", "application/x-amz-json-1.0")
	up.Header.Set("X-Amz-Target", TargetPrefix+op)
	return up, nil
}

// CopyAnswer writes resp, DynamoDB Local's answer, to w once its body has been read whole.
// Under load DynamoDB Local has been seen to end a large answer short: a 200 whose body stops
// before its Content-Length, which the SDK reports as "deserialization failed, unexpected EOF"
// and nobody retries. DynamoDB itself never does that, but it may answer 500
// InternalServerError, which the SDKs retry; so an answer that cannot be read whole is
// answered as that, and the error is returned for the caller to count.
func CopyAnswer(w http.ResponseWriter, resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		WriteInternalError(w)
		return fmt.Errorf("ddbwire: DynamoDB Local's answer ended short: %w", err)
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return nil
}

// WriteInternalError answers as DynamoDB does when it fails internally: 500
// InternalServerError, which the SDKs retry.
func WriteInternalError(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", "InternalServerError")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`))
}
