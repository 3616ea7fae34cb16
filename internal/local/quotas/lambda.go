package quotas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Lambda's reasons for a throttled invocation (TooManyRequestsException's Reason, the
// ThrottleReason enum of Lambda's API).
const (
	ReasonReserved = "ReservedFunctionConcurrentInvocationLimitExceeded"
	ReasonAccount  = "ConcurrentInvocationLimitExceeded"
)

// invoke handles a synchronous Invoke: the payload limits, a concurrency slot for the call's
// duration, injected refusals, and for a Lambda task of kumo's Step Functions the size of the
// result.
//
// The answer is held until the edge has answered whole, so the slot is free before the
// caller sees the answer, as on AWS, where the slot frees when the function returns: a caller
// that got its answer can invoke again at once without being throttled by itself.
func (g *Gate) invoke(w http.ResponseWriter, r *http.Request, fn string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	task := FromStepFunctions(r)
	// Step Functions checks a task's input before it invokes anything: the task fails with
	// States.DataLimitExceeded and Lambda never sees the call.
	if lim := g.limits.StatesPayload; task && lim > 0 && len(body) > lim {
		g.count("States.DataLimitExceeded (input)")
		writeDataLimit(w, fmt.Sprintf("The state/task '%s' was scheduled with an input of %d bytes, over the maximum number of bytes service limit (%d).", fn, len(body), lim))
		return
	}
	if lim := g.limits.InvokePayload; lim > 0 && len(body) > lim {
		g.count("RequestEntityTooLargeException")
		writeLambdaError(w, "RequestEntityTooLargeException", http.StatusRequestEntityTooLarge, "message",
			fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", lim), nil)
		return
	}
	release, reason := g.acquire(fn)
	if reason != "" {
		g.count("TooManyRequestsException (" + reason + ")")
		writeLambdaError(w, "TooManyRequestsException", http.StatusTooManyRequests, "message", "Rate Exceeded.",
			map[string]any{"Reason": reason})
		return
	}
	defer release() // also when the edge panics (a reverse proxy aborting a broken copy)
	if code, ok := g.injected(fn); ok {
		release()
		g.count(code + " (injected)")
		writeRefusal(w, code)
		return
	}
	res := &held{header: http.Header{}}
	g.next.ServeHTTP(res, r)
	release()
	if lim := g.limits.StatesPayload; task && lim > 0 && res.ok() && res.body.Len() > lim {
		g.count("States.DataLimitExceeded (result)")
		writeDataLimit(w, fmt.Sprintf("The state/task '%s' returned a result with a size exceeding the maximum number of bytes service limit (%d bytes, limit %d).", fn, res.body.Len(), lim))
		return
	}
	res.send(w)
}

// acquire takes a slot for an invocation of fn: from its reservation when it has one, else
// from the account's unreserved pool. It returns the slot's release (safe to call more than
// once), or the reason Lambda gives for refusing.
func (g *Gate) acquire(fn string) (release func(), reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	limit, reserved := g.limits.Reserved[fn]
	switch {
	case reserved && g.inFlight[fn] >= limit:
		return nil, ReasonReserved
	case !reserved && g.limits.Unreserved > 0 && g.pool >= g.limits.Unreserved:
		return nil, ReasonAccount
	}
	g.inFlight[fn]++
	g.peak[fn] = max(g.peak[fn], g.inFlight[fn])
	if !reserved {
		g.pool++
		g.poolPeak = max(g.poolPeak, g.pool)
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		g.mu.Lock()
		defer g.mu.Unlock()
		g.inFlight[fn]--
		if !reserved {
			g.pool--
		}
	}, ""
}

// InvokedFunction is the function of a Lambda Invoke call (POST
// /2015-03-31/functions/{name, ARN or partial ARN, with an optional qualifier}/invocations):
// what the gate counts against, and what the cost model's tap prices.
func InvokedFunction(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/2015-03-31/functions/")
	if !ok || r.Method != http.MethodPost {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "/invocations")
	if !ok {
		return "", false
	}
	name, err := url.PathUnescape(name)
	if err != nil {
		return "", false
	}
	if _, after, ok := strings.Cut(name, ":function:"); ok {
		name = after
	}
	name, _, _ = strings.Cut(name, ":") // a version or alias
	return name, name != ""
}

// isSync reports a RequestResponse invocation (the default). Event invocations are queued by
// Lambda, which retries their throttles itself; DryRun runs nothing.
func isSync(r *http.Request) bool {
	t := r.Header.Get("X-Amz-Invocation-Type")
	return t == "" || t == "RequestResponse"
}

// FromStepFunctions reports kumo's Step Functions invoking a Lambda task: kumo signs its
// internal calls with a fixed credential scope of its own (awsauth.ScopeHeader, "Credential=kumo/…")
// and its Step Functions engine sets no invocation type, unlike its API Gateway (RequestResponse)
// and its event deliveries (Event). An AWS SDK signs with the caller's credentials.
func FromStepFunctions(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Authorization"), "Credential=kumo/") &&
		r.Header.Get("X-Amz-Invocation-Type") == ""
}

// held is an answer kept until the edge finished it.
type held struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *held) Header() http.Header { return h.header }

func (h *held) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *held) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

// Flush does nothing: the answer goes out whole, after the slot is free.
func (h *held) Flush() {}

// ok reports a successful invocation whose function did not fail.
func (h *held) ok() bool {
	return (h.status == 0 || h.status == http.StatusOK) && h.header.Get("X-Amz-Function-Error") == ""
}

func (h *held) send(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}

// RefuseNext makes the next n synchronous invocations of function ("" for any function) be
// refused with exception before their handler runs, as Lambda refuses an invocation it
// could not start. exception is one of Refusals.
func (g *Gate) RefuseNext(function, exception string, n int) error {
	if n < 1 {
		return fmt.Errorf("quotas: RefuseNext %s: n is %d, want at least 1", exception, n)
	}
	return g.addRule(&rule{function: function, exception: exception, left: n})
}

// RefuseEvery makes every k-th synchronous invocation of function ("" for any function),
// counting those that got a slot and that no earlier rule refused, be refused with
// exception: a fixed, repeatable rate of refusals for load runs.
func (g *Gate) RefuseEvery(function, exception string, k int) error {
	if k < 1 {
		return fmt.Errorf("quotas: RefuseEvery %s: k is %d, want at least 1", exception, k)
	}
	return g.addRule(&rule{function: function, exception: exception, every: k})
}

// StopRefusing drops every injected refusal still to come.
func (g *Gate) StopRefusing() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rules = nil
}

// rule is an injected refusal: the next left invocations, or every every-th.
type rule struct {
	function, exception string
	left                int
	every, seen         int
}

func (g *Gate) addRule(r *rule) error {
	if _, _, ok := refusal(r.exception); !ok {
		return fmt.Errorf("quotas: %q is not a refusal the gate can inject (one of %s)", r.exception, strings.Join(Refusals(), ", "))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rules = append(g.rules, r)
	return nil
}

// injected returns the refusal an invocation of fn gets from the rules, if any.
func (g *Gate) injected(fn string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, r := range g.rules {
		if r.function != "" && r.function != fn {
			continue
		}
		if r.every == 0 {
			r.left--
			if r.left == 0 {
				g.rules = append(g.rules[:i:i], g.rules[i+1:]...)
			}
			return r.exception, true
		}
		r.seen++
		if r.seen%r.every == 0 {
			return r.exception, true
		}
	}
	return "", false
}

// Refusals are the exceptions RefuseNext and RefuseEvery inject: Lambda Invoke's errors for
// an invocation that never reached the handler.
func Refusals() []string {
	return []string{"EC2AccessDeniedException", "EC2ThrottledException", "EC2UnexpectedException", "ENILimitReachedException",
		"InvalidRuntimeException", "InvalidSecurityGroupIDException", "InvalidSubnetIDException", "InvalidZipFileException",
		"KMSAccessDeniedException", "KMSDisabledException", "KMSInvalidStateException", "KMSNotFoundException",
		"ResourceNotReadyException", "ServiceException", "SubnetIPAddressLimitReachedException", "TooManyRequestsException"}
}

// refusal is how Lambda answers exception: its HTTP status and the name of its message member
// ("Message" or "message": both occur in Lambda's model, and the gate writes the model's, though
// aws-sdk-go-v2 reads either); ok is false for an exception the gate does not inject. The statuses are
// those of the Invoke API reference's Errors section, which Lambda's model (and so
// aws-sdk-go-v2's lambda client) carries as each error's httpError trait.
func refusal(exception string) (status int, member string, ok bool) {
	switch exception {
	case "EC2AccessDeniedException", "EC2ThrottledException", "EC2UnexpectedException", "ENILimitReachedException",
		"InvalidRuntimeException", "InvalidSecurityGroupIDException", "InvalidSubnetIDException", "InvalidZipFileException",
		"KMSAccessDeniedException", "KMSDisabledException", "KMSInvalidStateException", "KMSNotFoundException",
		"SubnetIPAddressLimitReachedException":
		return http.StatusBadGateway, "Message", true
	case "ResourceNotReadyException":
		return http.StatusBadGateway, "message", true
	case "ServiceException":
		return http.StatusInternalServerError, "Message", true
	case "TooManyRequestsException":
		return http.StatusTooManyRequests, "message", true
	}
	return 0, "", false
}

// refusalMessage says what went wrong, after the Invoke API reference's descriptions.
func refusalMessage(exception string) string {
	switch exception {
	case "EC2AccessDeniedException":
		return "Lambda needs more permissions to configure the function's VPC settings."
	case "EC2ThrottledException":
		return "Amazon EC2 throttled Lambda while it initialized the function with its execution role."
	case "EC2UnexpectedException":
		return "Lambda got an unexpected EC2 client exception while setting up the function."
	case "ENILimitReachedException":
		return "Lambda could not create an elastic network interface in the function's VPC: the network interface limit is reached."
	case "InvalidRuntimeException":
		return "The runtime or runtime version of the function is not supported."
	case "InvalidSecurityGroupIDException":
		return "The security group ID of the function's VPC configuration is not valid."
	case "InvalidSubnetIDException":
		return "The subnet ID of the function's VPC configuration is not valid."
	case "InvalidZipFileException":
		return "Lambda could not unzip the deployment package."
	case "KMSAccessDeniedException":
		return "Lambda could not decrypt the environment variables: KMS access was denied. Check the function's KMS permissions."
	case "KMSDisabledException":
		return "Lambda could not decrypt the environment variables: the KMS key is disabled. Check the function's KMS key settings."
	case "KMSInvalidStateException":
		return "Lambda could not decrypt the environment variables: the KMS key's state is not valid for Decrypt. Check the function's KMS key settings."
	case "KMSNotFoundException":
		return "Lambda could not decrypt the environment variables: the KMS key was not found. Check the function's KMS key settings."
	case "ResourceNotReadyException":
		return "The function is inactive and its VPC connection is no longer available. Wait for the VPC connection to be reestablished and try again."
	case "SubnetIPAddressLimitReachedException":
		return "Lambda could not set up VPC access for the function: a configured subnet has no available IP addresses."
	case "ServiceException":
		return "The Lambda service encountered an internal error."
	case "TooManyRequestsException":
		return "Rate Exceeded."
	}
	return exception
}

// writeRefusal answers with an injectable refusal.
func writeRefusal(w http.ResponseWriter, exception string) {
	status, member, _ := refusal(exception)
	var extra map[string]any
	if exception == "TooManyRequestsException" {
		extra = map[string]any{"Reason": ReasonAccount}
	}
	writeLambdaError(w, exception, status, member, refusalMessage(exception), extra)
}

// writeLambdaError writes an error as Lambda's REST-JSON API does: the code in
// X-Amzn-Errortype, a JSON body with the message and Type ("User" for what the caller's
// account or configuration caused, "Service" for Lambda's own fault), and no __type, as in
// Lambda's own answers (e.g. 429 {"Reason":"…","Type":"User","message":"Rate Exceeded."}).
func writeLambdaError(w http.ResponseWriter, code string, status int, member, message string, extra map[string]any) {
	typ := "User"
	if status >= http.StatusInternalServerError && status != http.StatusBadGateway {
		typ = "Service"
	}
	body := map[string]any{"Type": typ, member: message}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeDataLimit answers kumo's Step Functions for a task over the payload limit. Lambda has
// no such answer: on AWS Step Functions itself fails the task with States.DataLimitExceeded.
// kumo only tells 200 from the rest and puts the body in the task's cause, so the answer is
// a 400 whose body names the error as Step Functions reports it (Error, Cause).
func writeDataLimit(w http.ResponseWriter, cause string) {
	b, _ := json.Marshal(map[string]string{"Error": "States.DataLimitExceeded", "Cause": cause})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", "States.DataLimitExceeded")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}
