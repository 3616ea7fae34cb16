// Command longrun is a client of the longrun API.
//
//	longrun [flags] create -type T -input JSON [-key K]
//	longrun [flags] get ID
//	longrun [flags] wait ID [-timeout 5m]
//	longrun [flags] cancel ID [-if-match N]
//	longrun [flags] list [-state S] [-type T] [-limit N] [-all]
//	longrun [flags] resolve ID -outcome succeeded|failed -reason R [-result JSON] [-problem-code C -problem-title T -problem-detail D]
//	longrun republish [-table T] [-bus B] ID... | -
//
// Flags: -api URL (LONGRUN_API_URL, default http://127.0.0.1:8080), -token T
// (LONGRUN_TOKEN), -sigv4 (sign with the AWS credentials of the environment instead).
// Responses are printed as JSON on stdout; a problem goes to stderr and the exit status is 1.
//
// republish is an operator's command that does not go through the API: it rebuilds every
// "Operation State Changed" event of the operations from their facts in the table
// (LONGRUN_TABLE) and publishes them again, in version order, on the bus
// (LONGRUN_EVENT_BUS), with the AWS credentials of the environment; see
// docs/lifecycle.md, "Events", and `longrun republish -h`.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/longrun-dev/longrun/internal/client/apiclient"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	global := flag.NewFlagSet("longrun", flag.ContinueOnError)
	global.SetOutput(stderr)
	api := global.String("api", envOr("LONGRUN_API_URL", "http://127.0.0.1:8080"), "the API's base URL (stage included)")
	token := global.String("token", os.Getenv("LONGRUN_TOKEN"), "bearer token (the local stack's authorizer)")
	sigv4 := global.Bool("sigv4", false, "sign requests with SigV4 using the environment's AWS credentials")
	global.Usage = func() {
		fmt.Fprintln(stderr, "usage: longrun [-api URL] [-token T | -sigv4] create|get|wait|cancel|list|resolve …")
		fmt.Fprintln(stderr, "       longrun republish [-table T] [-bus B] ID... | -   (operators: AWS credentials to the table and bus; -h for more)")
		fmt.Fprintln(stderr, "       longrun unknown [-table T] [-limit N] [-all]      (operators: the operations in outcome_unknown, every tenant's)")
		global.PrintDefaults()
	}
	if err := global.Parse(args); err != nil || global.NArg() == 0 {
		global.Usage()
		return 2
	}
	switch global.Arg(0) {
	case "republish":
		return republish(ctx, global.Args()[1:], os.Stdin, stdout, stderr, newRepublisher)
	case "unknown":
		return unknown(ctx, global.Args()[1:], stdout, stderr, openTable)
	}
	c := &apiclient.Client{BaseURL: *api, Token: *token}
	if *sigv4 {
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "longrun:", err)
			return 1
		}
		c.AWS = &cfg
	}
	cmd, rest := global.Arg(0), global.Args()[1:]
	commands := map[string]func(context.Context, *apiclient.Client, []string, io.Writer) (*apiclient.Response, error){
		"create": create, "get": get, "wait": wait, "cancel": cancel, "list": list, "resolve": resolve,
	}
	f, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "longrun: unknown command %q\n", cmd)
		global.Usage()
		return 2
	}
	resp, err := f(ctx, c, rest, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "longrun:", err)
		return 2
	}
	if resp == nil {
		return 0
	}
	if resp.Status >= 400 {
		fmt.Fprintf(stderr, "%d %s\n", resp.Status, resp.Body)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", resp.Body)
	return 0
}

func create(ctx context.Context, c *apiclient.Client, args []string, _ io.Writer) (*apiclient.Response, error) {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	typ := fs.String("type", "", "operation type, e.g. demo.task")
	input := fs.String("input", "{}", "the input, a JSON object")
	key := fs.String("key", "", "Idempotency-Key (default: a new random key; reuse one to retry safely)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *key == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		*key = hex.EncodeToString(b)
	}
	body, err := json.Marshal(map[string]json.RawMessage{"type": mustJSON(*typ), "input": json.RawMessage(*input)})
	if err != nil {
		return nil, fmt.Errorf("-input must be JSON: %w", err)
	}
	return c.Do(ctx, http.MethodPost, "/v1/operations", http.Header{"Idempotency-Key": {*key}}, body)
}

func get(ctx context.Context, c *apiclient.Client, args []string, _ io.Writer) (*apiclient.Response, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("get takes an operation id")
	}
	return c.Do(ctx, http.MethodGet, "/v1/operations/"+url.PathEscape(args[0]), nil, nil)
}

// wait polls an operation, honouring Retry-After, until it is terminal or outcome_unknown.
func wait(ctx context.Context, c *apiclient.Client, args []string, _ io.Writer) (*apiclient.Response, error) {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after")
	if len(args) == 0 {
		return nil, fmt.Errorf("wait takes an operation id")
	}
	id := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(*timeout)
	for {
		resp, err := c.Do(ctx, http.MethodGet, "/v1/operations/"+url.PathEscape(id), nil, nil)
		if err != nil || resp.Status != http.StatusOK {
			return resp, err
		}
		var rep struct {
			Terminal bool   `json:"terminal"`
			State    string `json:"state"`
		}
		_ = json.Unmarshal(resp.Body, &rep)
		after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if rep.Terminal || rep.State == "outcome_unknown" || after <= 0 {
			return resp, nil
		}
		if time.Now().Add(time.Duration(after) * time.Second).After(deadline) {
			return nil, fmt.Errorf("%s is still %s after %v", id, rep.State, *timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(after) * time.Second):
		}
	}
}

func cancel(ctx context.Context, c *apiclient.Client, args []string, _ io.Writer) (*apiclient.Response, error) {
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	ifMatch := fs.Int("if-match", 0, "cancel only if the operation is still at this version")
	if len(args) == 0 {
		return nil, fmt.Errorf("cancel takes an operation id")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	h := http.Header{}
	if *ifMatch > 0 {
		h.Set("If-Match", strconv.Quote(strconv.Itoa(*ifMatch)))
	}
	return c.Do(ctx, http.MethodPost, "/v1/operations/"+url.PathEscape(args[0])+"/cancel", h, nil)
}

// list prints one page, or with -all every page (as one JSON array of items).
func list(ctx context.Context, c *apiclient.Client, args []string, stdout io.Writer) (*apiclient.Response, error) {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	state := fs.String("state", "", "only this state")
	typ := fs.String("type", "", "only this type")
	limit := fs.Int("limit", 0, "page size (1–100)")
	cursor := fs.String("cursor", "", "continue after this page")
	all := fs.Bool("all", false, "follow nextCursor to the end")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	for {
		q := url.Values{}
		for k, v := range map[string]string{"state": *state, "type": *typ, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *limit > 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		path := "/v1/operations"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		resp, err := c.Do(ctx, http.MethodGet, path, nil, nil)
		if err != nil || resp.Status != http.StatusOK || !*all {
			return resp, err
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(resp.Body, &page); err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.NextCursor == nil {
			out, _ := json.Marshal(items)
			fmt.Fprintf(stdout, "%s\n", out)
			return nil, nil
		}
		*cursor = *page.NextCursor
	}
}

// resolve settles an outcome_unknown operation (operators only).
func resolve(ctx context.Context, c *apiclient.Client, args []string, _ io.Writer) (*apiclient.Response, error) {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	outcome := fs.String("outcome", "", "succeeded or failed")
	reason := fs.String("reason", "", "why (kept in the operation's facts)")
	result := fs.String("result", "", "with succeeded: the result, a JSON object")
	code := fs.String("problem-code", "", "with failed: the problem's code")
	title := fs.String("problem-title", "", "with failed: the problem's title")
	detail := fs.String("problem-detail", "", "with failed: the problem's detail")
	if len(args) == 0 {
		return nil, fmt.Errorf("resolve takes an operation id")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	body := map[string]any{"outcome": *outcome, "reason": *reason}
	if *result != "" {
		body["result"] = json.RawMessage(*result)
	}
	if *code != "" {
		body["problem"] = map[string]string{"type": "https://longrun.dev/problems/" + *code, "code": *code, "title": *title, "detail": *detail}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("-result must be JSON: %w", err)
	}
	return c.Do(ctx, http.MethodPost, "/v1/operations/"+url.PathEscape(args[0])+"/resolve", nil, b)
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
