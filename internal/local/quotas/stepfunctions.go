package quotas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// bucketState is one action's bucket: its tokens as of at.
type bucketState struct {
	tokens float64
	at     time.Time
}

// stepFunctions handles a Step Functions API call: the action's bucket first (a throttled
// call is refused before it is read, and still took its try from the caller), then
// StartExecution's input size.
func (g *Gate) stepFunctions(w http.ResponseWriter, r *http.Request, action string) {
	if !g.take(action) {
		g.count("ThrottlingException (" + action + ")")
		writeStatesError(w, "com.amazon.coral.availability", "ThrottlingException", "Rate exceeded")
		return
	}
	if lim := g.limits.StatesPayload; action == "StartExecution" && lim > 0 {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var in struct {
			Input *string `json:"input"`
		}
		// A body that is not JSON is kumo's to refuse. The limit counts the input's UTF-8
		// bytes (StartExecution's input: "Length constraints apply to the payload size, and
		// are expressed as bytes in UTF-8 encoding"); a Go string is those bytes.
		if json.Unmarshal(body, &in) == nil && in.Input != nil && len(*in.Input) > lim {
			g.count("InvalidExecutionInput")
			writeStatesError(w, "com.amazonaws.swf.service.v2.model", "InvalidExecutionInput",
				fmt.Sprintf("The execution input is %d bytes, over the maximum of %d bytes of UTF-8 encoded data.", len(*in.Input), lim))
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// take takes a token from action's bucket, refilled for the time since the last call, or
// reports that it is empty. An action without a bucket always has one.
func (g *Gate) take(action string) bool {
	b, ok := g.limits.StepFunctions[action]
	if !ok || b.Size <= 0 {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	st := g.buckets[action]
	if st == nil {
		st = &bucketState{tokens: float64(b.Size), at: now} // a bucket starts full
		g.buckets[action] = st
	}
	if elapsed := now.Sub(st.at); elapsed > 0 {
		st.tokens = min(float64(b.Size), st.tokens+elapsed.Seconds()*b.RefillPerSecond)
		st.at = now
	}
	if st.tokens < 1 {
		return false
	}
	st.tokens--
	return true
}

// writeStatesError writes an error as Step Functions' awsJson1_0 API does: HTTP 400, the
// shape's id in the body's __type (namespace#code) and the code in X-Amzn-Errortype; SDKs
// take the code from either, the part after '#'.
func writeStatesError(w http.ResponseWriter, namespace, code, message string) {
	b, _ := json.Marshal(map[string]string{"__type": namespace + "#" + code, "message": message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}
