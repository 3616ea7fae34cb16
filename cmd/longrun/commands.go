package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/longrun-dev/longrun/client"
)

// runner is what a command's flags function returns: the command's work, once the flags
// and positional arguments are parsed.
type runner = func(ctx context.Context, x *invocation, pos []string) int

func (c *cli) create(fs *flag.FlagSet) runner {
	typ := fs.String("type", "", "the operation type, e.g. demo.task (longrun types lists them)")
	input := fs.String("input", "{}", "the input: a `JSON` object, or @FILE to read it from a file, @- from stdin")
	key := fs.String("key", "", "the Idempotency-Key (default: a new one, printed in the JSON output, or with -wait on stderr; run the same create with it to retry safely)")
	wait := fs.Bool("wait", false, "follow the operation until it ends; the exit status says how it ended")
	timeout := fs.Duration("timeout", 0, "with -wait: stop waiting after this long, exit status 6 (default: until it ends)")
	return func(ctx context.Context, x *invocation, pos []string) int {
		switch {
		case len(pos) > 0:
			return x.usageError("takes no arguments, got %q", pos)
		case *typ == "":
			return x.usageError("-type is required")
		case *timeout < 0:
			return x.usageError("-timeout must not be negative")
		case *timeout != 0 && !*wait:
			return x.usageError("-timeout goes with -wait")
		}
		in, err := readObject("-input", *input, x.stdin)
		if err != nil {
			return x.usageError("%v", err)
		}
		k, minted, err := keyOrNew(*key)
		if err != nil {
			return x.usageError("-key: %v", err)
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		req := client.CreateRequest{Type: *typ, Input: in, Key: k}
		if !*wait {
			op, err := api.Create(ctx, req, nil)
			if err != nil {
				return x.createFailed(err, k)
			}
			x.printAdmission(op)
			return exitOK
		}
		admit := func(ctx context.Context) (*client.Operation, error) {
			op, err := api.Create(ctx, req, nil)
			if err == nil && minted {
				// stdout gets the operation as it ends, the API's representation, which has
				// no key; the key a retry needs goes to stderr, beside the progress, at once,
				// so that it is there however the wait ends.
				fmt.Fprintf(x.stderr, "longrun: %s admitted with the minted Idempotency-Key %s (run the same create with -key %s to reach it again, never a second one)\n",
					op.OperationID, k, k)
			}
			return op, err
		}
		return x.follow(ctx, api, *timeout, admit, func(err error) int { return x.createFailed(err, k) }, mayHaveBeenAdmitted(k))
	}
}

// createFailed reports an admission that failed; when the answer leaves open whether the
// operation was admitted, it says how to find out without admitting it twice.
func (x *invocation) createFailed(err error, key string) int {
	code := x.fail(err)
	var te *client.TransportError
	var pe *client.ProblemError
	if errors.As(err, &te) || errors.Is(err, client.ErrRetryWindowPassed) || (errors.As(err, &pe) && pe.Status >= 500) {
		fmt.Fprintln(x.stderr, mayHaveBeenAdmitted(key))
	}
	return code
}

func mayHaveBeenAdmitted(key string) string {
	return "longrun: the operation may have been admitted: run the same create with -key " + key + " to reach it, never a second one"
}

func resumeHint(id string) string { return "longrun: resume with: longrun get -watch " + id }

func (c *cli) get(fs *flag.FlagSet) runner {
	watch := fs.Bool("watch", false, "follow the operation until it ends; the exit status says how it ended")
	timeout := fs.Duration("timeout", 0, "with -watch: stop waiting after this long, exit status 6 (default: until it ends)")
	return func(ctx context.Context, x *invocation, pos []string) int {
		switch {
		case len(pos) != 1:
			return x.usageError("takes one operation id")
		case *timeout < 0:
			return x.usageError("-timeout must not be negative")
		case *timeout != 0 && !*watch:
			return x.usageError("-timeout goes with -watch")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		if !*watch {
			op, err := api.Get(ctx, pos[0])
			if err != nil {
				return x.fail(err)
			}
			x.printOperation(op)
			return exitOK
		}
		return x.follow(ctx, api, *timeout, func(ctx context.Context) (*client.Operation, error) { return api.Get(ctx, pos[0]) }, x.fail, resumeHint(pos[0]))
	}
}

// wait is get -watch, kept by its own name.
func (c *cli) wait(fs *flag.FlagSet) runner {
	timeout := fs.Duration("timeout", 0, "stop waiting after this long, exit status 6 (default: until it ends)")
	return func(ctx context.Context, x *invocation, pos []string) int {
		switch {
		case len(pos) != 1:
			return x.usageError("takes one operation id")
		case *timeout < 0:
			return x.usageError("-timeout must not be negative")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		return x.follow(ctx, api, *timeout, func(ctx context.Context) (*client.Operation, error) { return api.Get(ctx, pos[0]) }, x.fail, resumeHint(pos[0]))
	}
}

// ifVersionFlag declares -if-version N, the If-Match of a command that changes an
// operation (what it does: "cancel", "send it"); the result is nil when it was not given.
func ifVersionFlag(fs *flag.FlagSet, what string) func() *int {
	var version *int
	fs.Func("if-version", what+" only while the operation is still at version `N` (If-Match); 412 version_mismatch otherwise", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return errors.New("want a version, a whole number")
		}
		version = &n
		return nil
	})
	return func() *int { return version }
}

func (c *cli) cancel(fs *flag.FlagSet) runner {
	ifVersion := ifVersionFlag(fs, "cancel")
	return func(ctx context.Context, x *invocation, pos []string) int {
		if len(pos) != 1 {
			return x.usageError("takes one operation id")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		op, err := api.Cancel(ctx, pos[0], &client.CancelOptions{IfVersion: ifVersion()})
		if err != nil {
			return x.fail(err)
		}
		x.printOperation(op)
		return exitOK
	}
}

func (c *cli) signal(fs *flag.FlagSet) runner {
	data := fs.String("data", "{}", "the signal's data: a `JSON` object, or @FILE to read it from a file, @- from stdin (longrun types TYPE -o json shows the signal's schema)")
	key := fs.String("key", "", "the Idempotency-Key (default: a new one, printed on stderr; send the same signal with it to retry safely)")
	ifVersion := ifVersionFlag(fs, "send it")
	return func(ctx context.Context, x *invocation, pos []string) int {
		if len(pos) != 2 {
			return x.usageError("takes an operation id and a signal name")
		}
		in, err := readObject("-data", *data, x.stdin)
		if err != nil {
			return x.usageError("%v", err)
		}
		k, minted, err := keyOrNew(*key)
		if err != nil {
			return x.usageError("-key: %v", err)
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		id, name := pos[0], pos[1]
		op, err := api.Signal(ctx, id, name, in, &client.SignalOptions{Key: k, IfVersion: ifVersion()})
		if err != nil {
			code := x.fail(err)
			var te *client.TransportError
			var pe *client.ProblemError
			if errors.As(err, &te) || (errors.As(err, &pe) && pe.Status >= 500) {
				fmt.Fprintf(x.stderr, "longrun: the signal may have been delivered: run the same signal with -key %s to find out, never delivering it twice\n", k)
			}
			return code
		}
		switch {
		case op.Replayed:
			fmt.Fprintf(x.stderr, "longrun: %s had already received this signal with the Idempotency-Key %s: nothing new was recorded\n", op.OperationID, k)
		case minted:
			fmt.Fprintf(x.stderr, "longrun: signal %s sent to %s with the minted Idempotency-Key %s (run the same signal with -key %s to send it again: the operation hears it once)\n",
				name, op.OperationID, k, k)
		}
		x.printOperation(op)
		return exitOK
	}
}

func (c *cli) list(fs *flag.FlagSet) runner {
	state := fs.String("state", "", "only operations in this state: accepted, dispatched, running, cancelling, succeeded, failed, canceled, outcome_unknown")
	typ := fs.String("type", "", "only operations of this type")
	target := fs.String("target", "", "only operations whose target begins with this `PREFIX` (e.g. demo:build-)")
	after := timeFlag(fs, "created-after", "only operations created at or after this `time` (RFC 3339)")
	before := timeFlag(fs, "created-before", "only operations created before this `time` (RFC 3339)")
	limit := fs.Int("limit", 0, "operations per page, 1 to 100 (default: the API's, 20)")
	cursor := fs.String("cursor", "", "start at this page (the cursor a previous list printed)")
	all := fs.Bool("all", false, "every page, not just the first")
	return func(ctx context.Context, x *invocation, pos []string) int {
		switch {
		case len(pos) > 0:
			return x.usageError("takes no arguments, got %q", pos)
		case *state != "" && !client.State(*state).Valid():
			return x.usageError("-state %q is not a state", *state)
		case *limit < 0 || *limit > 100:
			return x.usageError("-limit is 1 to 100")
		case !after().IsZero() && !before().IsZero() && !after().Before(before()):
			return x.usageError("-created-before must be later than -created-after")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		pager := api.NewListPager(&client.ListOptions{State: client.State(*state), Type: *typ, Target: *target,
			CreatedAfter: after(), CreatedBefore: before(), Limit: *limit, Cursor: *cursor})
		ops, more := []client.Operation{}, ""
		for page, err := range pager.Pages(ctx) {
			if err != nil {
				return x.fail(err)
			}
			ops = append(ops, page.Items...)
			if !*all {
				more = page.NextCursor
				break
			}
		}
		x.printOperations(ops)
		if more != "" {
			fmt.Fprintf(x.stderr, "longrun: more operations follow: -cursor %s for the next page, -all for every page\n", more)
		}
		return exitOK
	}
}

func (c *cli) types(fs *flag.FlagSet) runner {
	return func(ctx context.Context, x *invocation, pos []string) int {
		if len(pos) > 1 {
			return x.usageError("takes at most one type name")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		if len(pos) == 1 {
			t, err := api.Type(ctx, pos[0])
			if err != nil {
				return x.fail(err)
			}
			x.printType(t)
			return exitOK
		}
		ts, err := api.Types(ctx)
		if err != nil {
			return x.fail(err)
		}
		x.printTypes(ts)
		return exitOK
	}
}

func (c *cli) resolve(fs *flag.FlagSet) runner {
	outcome := fs.String("outcome", "", "succeeded, failed, or retry (the step whose outcome is unknown runs again)")
	ifVersion := ifVersionFlag(fs, "resolve it")
	reason := fs.String("reason", "", "why (kept in the operation's facts); required")
	result := fs.String("result", "", "with -outcome succeeded: the result, a `JSON` object (or @FILE, @-)")
	code := fs.String("problem-code", "", "with -outcome failed: the problem's code (snake_case)")
	title := fs.String("problem-title", "", "with -problem-code: the problem's title")
	detail := fs.String("problem-detail", "", "with -problem-code: the problem's detail")
	return func(ctx context.Context, x *invocation, pos []string) int {
		o := client.ResolveOutcome(*outcome)
		switch {
		case len(pos) != 1:
			return x.usageError("takes one operation id")
		case !o.Valid():
			return x.usageError("-outcome is succeeded, failed or retry")
		case strings.TrimSpace(*reason) == "":
			return x.usageError("-reason is required")
		case *result != "" && o != client.ResolveSucceeded:
			return x.usageError("-result goes with -outcome succeeded")
		case (*code != "" || *title != "" || *detail != "") && o != client.ResolveFailed:
			return x.usageError("-problem-* go with -outcome failed")
		case (*code == "") != (*title == "") || (*detail != "" && *code == ""):
			return x.usageError("-problem-code and -problem-title go together (-problem-detail with them)")
		}
		req := client.ResolveRequest{Outcome: o, Reason: *reason, IfVersion: ifVersion()}
		if *result != "" {
			raw, err := readObject("-result", *result, x.stdin)
			if err != nil {
				return x.usageError("%v", err)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber() // numbers go out as they came
			if err := dec.Decode(&m); err != nil {
				return x.usageError("-result: %v", err)
			}
			req.Result = m
		}
		if *code != "" {
			req.Problem = &client.OperationProblem{Type: "https://longrun.dev/problems/" + *code, Code: *code, Title: *title, Detail: *detail}
		}
		api, exit := x.client(ctx)
		if api == nil {
			return exit
		}
		if o == client.ResolveRetry && req.IfVersion == nil {
			// A retry is recorded only at the version it was decided on: the one read now.
			cur, err := api.Get(ctx, pos[0])
			if err != nil {
				return x.fail(err)
			}
			req.IfVersion = &cur.Version
			fmt.Fprintf(x.stderr, "longrun: retrying %s at version %d, %s as read now (-if-version N to name the version you looked at)\n",
				cur.OperationID, cur.Version, cur.State)
		}
		op, err := api.Resolve(ctx, pos[0], req)
		if err != nil {
			return x.fail(err)
		}
		x.printOperation(op)
		return exitOK
	}
}

// timeFlag declares a flag of an RFC 3339 time; the result is zero when it was not given.
func timeFlag(fs *flag.FlagSet, name, usage string) func() time.Time {
	var t time.Time
	fs.Func(name, usage, func(s string) error {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return errors.New("want an RFC 3339 time, e.g. 2026-11-30T10:00:00Z")
		}
		t = v
		return nil
	})
	return func() time.Time { return t }
}

// readObject reads a flag's JSON object: the text itself, @FILE, or @- for stdin.
func readObject(flagName, v string, stdin io.Reader) (json.RawMessage, error) {
	b := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		var err error
		if name == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
	}
	var probe any
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s must be a JSON object: %v", flagName, err)
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, fmt.Errorf("%s must be a JSON object, not %s", flagName, strings.TrimSpace(string(b)))
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, b)
	return buf.Bytes(), nil
}

// checkKey refuses what the API would refuse as an Idempotency-Key (400
// invalid_idempotency_key): 1 to 128 printable ASCII characters.
func checkKey(k string) error {
	if len(k) > 128 {
		return fmt.Errorf("%d characters; at most 128", len(k))
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return errors.New("only printable ASCII characters")
		}
	}
	return nil
}

// keyOrNew is the Idempotency-Key a command sends: -key's, checked, or a new one (minted).
func keyOrNew(key string) (k string, minted bool, err error) {
	if key == "" {
		return client.NewIdempotencyKey(), true, nil
	}
	return key, false, checkKey(key)
}
