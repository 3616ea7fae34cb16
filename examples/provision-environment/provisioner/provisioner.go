// Package provisioner is the example's stand-in for a real provisioning system (a cloud
// API, Terraform Cloud, an internal platform): it creates environments asynchronously, they
// become ready some polls later, and a create with a key it has seen returns the same
// environment, so a step that runs twice creates one. A create may also hand it a callback
// URL: it then makes the environment in its own time and POSTs the environment, ready or
// failed, to that URL when done, as a webhook, with no credentials. Fake keeps the state in
// memory; Handler serves it over HTTP (cmd/fake-provisioner, and the end-to-end test), and
// Client is what the worker uses.
package provisioner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Request asks for an environment.
type Request struct {
	Project     string `json:"project"`
	Environment string `json:"environment"`
	Template    string `json:"template"`
	// CallbackURL, when set, is where the provisioner POSTs the environment (an
	// Environment, as JSON) once it is ready or has failed, with no credentials: a
	// longrun callback URL (worker.Step.CallbackURL). The provisioner keeps it to itself:
	// an Environment never shows it.
	CallbackURL string `json:"callbackUrl,omitempty"`
}

// Environment is what the provisioner knows of one, and what it POSTs to a callback URL.
type Environment struct {
	ID     string `json:"id"`
	Status string `json:"status"` // "creating", then "ready" or "failed"
	// Reason says why an environment failed.
	Reason string `json:"reason,omitempty"`
	Request
}

// ErrUnknownTemplate is the provisioner's refusal of a template it does not have: nothing
// was created.
var ErrUnknownTemplate = errors.New("unknown template")

// ErrNotSent means that a request never left this process: the connection to the
// provisioner could not be made (refused, unreachable, a name that does not resolve, a
// timeout while dialling), so not a byte of it was written and the provisioner did nothing.
// Any other failure to get an answer (a timeout or a reset after the request was written)
// leaves open whether it acted, and is not ErrNotSent.
var ErrNotSent = errors.New("provisioner: request not sent")

// Provisioner is what the worker needs of a provisioning system.
type Provisioner interface {
	// Create starts creating the environment; key deduplicates (the same key returns the
	// same environment and creates nothing more).
	Create(ctx context.Context, key string, req Request) (Environment, error)
	Get(ctx context.Context, id string) (Environment, error)
}

// Fake is an in-memory Provisioner whose environments are made after ReadyAfter reads: ready,
// or failed for a template in Broken. An environment asked for with a callback URL is made
// in the fake's own time instead, CallbackAfter after the create, and the fake then POSTs it
// to the callback URL, trying again a few times if the POST gets no answer or
// a 5xx or 429.
type Fake struct {
	ReadyAfter int
	Templates  []string // templates it knows; none means any
	Prefix     string   // of its environments' ids, to tell two fakes' apart
	// CallbackAfter is how long an environment asked for with a callback URL takes.
	CallbackAfter time.Duration
	// Broken are templates whose environments fail, once made, rather than become ready.
	Broken []string
	// HTTP sends the callbacks; nil means a client with a 10 s timeout.
	HTTP *http.Client

	mu         sync.Mutex
	byKey      map[string]string
	envs       map[string]*Environment
	reads      map[string]int
	pending    map[string]bool // environments that a callback will finish
	creates    int
	calls      int
	gets       int
	urls       map[string]string // callback URL by environment
	deliveries []Delivery
}

// Delivery is one POST of an environment to its callback URL.
type Delivery struct {
	EnvironmentID string
	URL           string
	// Status is the answer's HTTP status; 0 when none came (Err says why).
	Status int
	Err    error
}

// Create implements Provisioner.
func (f *Fake) Create(_ context.Context, key string, req Request) (Environment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.byKey == nil {
		f.byKey, f.envs, f.reads = map[string]string{}, map[string]*Environment{}, map[string]int{}
	}
	if id, ok := f.byKey[key]; ok {
		return *f.envs[id], nil
	}
	if len(f.Templates) > 0 && !contains(f.Templates, req.Template) {
		return Environment{}, ErrUnknownTemplate
	}
	f.creates++
	callback := req.CallbackURL
	req.CallbackURL = "" // kept apart, never shown
	env := &Environment{ID: fmt.Sprintf("%senv-%d", f.Prefix, f.creates), Status: "creating", Request: req}
	f.byKey[key], f.envs[env.ID] = env.ID, env
	if callback != "" {
		if f.pending == nil {
			f.pending, f.urls = map[string]bool{}, map[string]string{}
		}
		f.pending[env.ID], f.urls[env.ID] = true, callback
		time.AfterFunc(f.CallbackAfter, func() { f.finish(env.ID, callback) })
	}
	return *env, nil
}

// finish makes the environment id, asked for with a callback URL: ready, or failed for a
// Broken template. Then it POSTs the environment to url.
func (f *Fake) finish(id, url string) {
	f.mu.Lock()
	env := f.envs[id]
	f.made(env)
	delete(f.pending, id)
	body, _ := json.Marshal(env)
	hc := f.HTTP
	f.mu.Unlock()
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	for try, wait := 1, 200*time.Millisecond; ; try, wait = try+1, wait*2 {
		d := post(hc, id, url, body)
		f.mu.Lock()
		f.deliveries = append(f.deliveries, d)
		f.mu.Unlock()
		if d.Err == nil && d.Status < 500 && d.Status != http.StatusTooManyRequests || try == 5 {
			return
		}
		time.Sleep(wait)
	}
}

// made makes env: ready, or failed for a Broken template. f.mu is held.
func (f *Fake) made(env *Environment) {
	env.Status = "ready"
	if contains(f.Broken, env.Template) {
		env.Status, env.Reason = "failed", "The template's resources could not be created."
	}
}

// post POSTs body to url, as a webhook does: JSON, and no credentials.
func post(hc *http.Client, id, url string, body []byte) Delivery {
	d := Delivery{EnvironmentID: id, URL: url}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		d.Err = err
		return d
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		d.Err = err
		return d
	}
	defer resp.Body.Close()
	d.Status = resp.StatusCode
	return d
}

// Get implements Provisioner.
func (f *Fake) Get(_ context.Context, id string) (Environment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	env, ok := f.envs[id]
	if !ok {
		return Environment{}, fmt.Errorf("no environment %s", id)
	}
	f.reads[id]++
	if f.reads[id] >= f.ReadyAfter && !f.pending[id] && env.Status == "creating" {
		f.made(env)
	}
	return *env, nil
}

// Creates is how many environments were created (not counting deduplicated creates).
func (f *Fake) Creates() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates
}

// Knows reports whether path (/environments/<id>) names one of f's environments.
func (f *Fake) Knows(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.envs[strings.TrimPrefix(path, "/environments/")]
	return ok
}

// Calls counts the creates asked for (deduplicated or not), and Gets the polls.
func (f *Fake) Calls() (creates, gets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.gets
}

// Polls is how many times the environment id was read (Get).
func (f *Fake) Polls(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[id]
}

// CallbackURL is the callback URL the environment id was asked for with ("" for none).
func (f *Fake) CallbackURL(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.urls[id]
}

// Deliveries are the fake's POSTs to callback URLs so far, in the order they were made.
func (f *Fake) Deliveries() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Delivery(nil), f.deliveries...)
}

// ByKey is the environment created for the deduplication key, if any.
func (f *Fake) ByKey(key string) (Environment, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.byKey[key]
	if !ok {
		return Environment{}, false
	}
	return *f.envs[id], true
}

// Keys are the deduplication keys the fake has seen.
func (f *Fake) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.byKey {
		keys = append(keys, k)
	}
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Handler serves p over HTTP: POST /environments (header Idempotency-Key) and
// GET /environments/{id}.
func Handler(p Provisioner) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /environments", func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		env, err := p.Create(r.Context(), r.Header.Get("Idempotency-Key"), req)
		switch {
		case errors.Is(err, ErrUnknownTemplate):
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			writeJSON(w, http.StatusAccepted, env)
		}
	})
	mux.HandleFunc("GET /environments/{id}", func(w http.ResponseWriter, r *http.Request) {
		env, err := p.Get(r.Context(), r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, http.StatusOK, env)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Client is a Provisioner over HTTP.
type Client struct {
	URL  string
	HTTP *http.Client
}

// Create implements Provisioner.
func (c Client) Create(ctx context.Context, key string, req Request) (Environment, error) {
	body, _ := json.Marshal(req)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.URL, "/")+"/environments", bytes.NewReader(body))
	if err != nil {
		return Environment{}, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	return c.do(r)
}

// Get implements Provisioner.
func (c Client) Get(ctx context.Context, id string) (Environment, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.URL, "/")+"/environments/"+id, nil)
	if err != nil {
		return Environment{}, err
	}
	return c.do(r)
}

func (c Client) do(r *http.Request) (Environment, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(r)
	if err != nil {
		if notSent(err) {
			return Environment{}, fmt.Errorf("%w: %w", ErrNotSent, err)
		}
		return Environment{}, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return Environment{}, ErrUnknownTemplate
	case resp.StatusCode >= 300:
		return Environment{}, fmt.Errorf("provisioner: %s %s: %s", r.Method, r.URL.Path, resp.Status)
	}
	var env Environment
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return Environment{}, fmt.Errorf("provisioner: %w", err)
	}
	return env, nil
}

// notSent says whether err, an error of http.Client.Do, proves that the request was never
// written. net/http reports a connection it could not make as a *net.OpError whose Op is
// "dial" (a DNS failure is one too, wrapping a *net.DNSError); once a connection is made,
// the request may have been written, whatever fails after.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
