// Command longrun is the command line of longrun's API, built on the public client
// (github.com/longrun-dev/longrun/client): admit an operation and follow it to its end,
// read, list, signal, cancel and resolve operations, read their histories, describe the
// operation types, and, for operators, the attention queue and the stats. `longrun -help`
// prints the whole usage (the usage constant below), output formats and exit statuses
// included.
//
// republish and unknown are operators' commands that do not go through the API: republish
// rebuilds every "Operation State Changed" event of the operations from their facts in the
// table (LONGRUN_TABLE) and publishes them again, in version order, on the bus
// (LONGRUN_EVENT_BUS); unknown lists every tenant's operations in outcome_unknown. Both use
// the AWS credentials of the environment; see docs/lifecycle.md and `longrun republish -h`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/longrun-dev/longrun/client"
)

// Exit statuses (usage lists them too).
const (
	exitOK          = 0   // success; after a wait, the operation succeeded
	exitFailed      = 1   // the operation failed
	exitUsage       = 2   // the command line is wrong
	exitCanceled    = 3   // the operation was canceled
	exitUnknown     = 4   // the operation's outcome is unknown
	exitAPI         = 5   // an API problem or a transport failure
	exitTimeout     = 6   // -timeout ran out before the operation ended
	exitInterrupted = 130 // Ctrl-C (SIGINT) while waiting; 143 for SIGTERM
)

const usage = `longrun: durable long-running operations, from the command line

Usage:
  longrun [global flags] COMMAND [flags] [ARGS]

Commands:
  create -type T [-input JSON|@FILE|@-] [-key K] [-wait [-timeout D]]
        admit an operation, exactly once per key (-key; one is minted when omitted, and
        printed in the JSON output, or with -wait on stderr: run the same create with it
        to retry safely)
  get ID [-watch [-timeout D]]
        show an operation; with -watch, follow it until it ends
  wait ID [-timeout D]
        the same as get -watch
  cancel ID [-if-version N]
        ask an operation to stop (cancellation intent, not a rollback); with -if-version,
        only while it is still at version N
  signal ID NAME [-data JSON|@FILE|@-] [-key K] [-if-version N]
        send an operation a signal its type declares (an approval, news from a webhook),
        exactly once per key (-key; one is minted when omitted, and printed on stderr:
        send the same signal with it to retry safely); get shows what the work awaits
  list [-state S] [-type T] [-target PREFIX] [-created-after T] [-created-before T]
       [-limit N] [-cursor C] [-all]
        your operations, newest first: one page, or every page with -all; -target
        lists the targets that begin with PREFIX, -created-after/-before a window of
        creation times (RFC 3339)
  history ID
        an operation's facts, oldest first, each with the state it led to (operators
        see who recorded each)
  types [NAME]
        the operation types the API admits, or one of them (-o json: with its input schema
        and signals)
  resolve ID -outcome succeeded|failed|retry -reason R [-if-version N] [-result JSON]
          [-problem-code C -problem-title T [-problem-detail D]]
        operators: settle an operation in outcome_unknown, or with retry have its step
        run again (only at version N: the one you looked at; without -if-version, retry
        reads the operation's version first)
  attention [-limit N] [-cursor C] [-all]
        operators: every tenant's operations waiting for an operator, oldest first
  stats
        operators: the operations in flight by state, those waiting for an operator,
        and the oldest in flight
  republish [-table T] [-bus B] ID... | -
        operators, with AWS credentials to the table and bus: publish an operation's
        events again from its facts (longrun republish -h)
  unknown [-table T] [-limit N] [-all]
        operators, with AWS credentials to the table: every tenant's operations in
        outcome_unknown, read from the table itself (longrun unknown -h; attention asks
        the API)
  help [COMMAND]
        this text, or a command's flags

Global flags (accepted after the command too):
  -api URL     the API's base URL, stage included (LONGRUN_API; default http://127.0.0.1:8080)
  -token T     bearer token (LONGRUN_TOKEN)
  -sigv4       sign requests with SigV4 using the environment's AWS credentials, for an
               IAM-authorized stage (AWS_PROFILE, AWS_REGION, … as usual)
  -o FORMAT    json, id or table; default: table when stdout is a terminal, json otherwise

Output (stdout):
  json    the operation as the API represents it, indented; list and types print an array;
          create without -wait prints the admission's answer with its idempotencyKey
  id      only the operation id (list: one per line; types: the names)
  table   aligned columns

Waiting (create -wait, get -watch, wait):
  Progress goes to stderr: on a terminal, one live line (state, steps, percent, the worker's
  message, the signal the work awaits and until when, time elapsed, the next poll);
  otherwise one plain line per change. The operation as it ended goes to stdout.
  -timeout D stops waiting after D (default: until it ends).
  Ctrl-C stops waiting and never cancels the operation: it prints how to resume
  (longrun get -watch ID) and exits 130.

Exit status:
  0    success; after waiting: the operation succeeded
  1    the operation failed (its problem is printed on stderr)
  2    usage error
  3    the operation was canceled
  4    the operation's outcome is unknown: an operator settles it (longrun resolve)
  5    an API problem (printed on stderr with its status, code and detail) or a transport
       failure (no answer after the client's retries)
  6    -timeout ran out before the operation ended (it goes on)
  130  interrupted (Ctrl-C) while waiting (the operation goes on; 143 for SIGTERM)
  Commands that do not wait (create without -wait, get, cancel, signal, list, history,
  types, resolve, attention, stats) exit 0 or 5 (and 2), whatever the operation's state.
  republish and unknown exit 1 when they fail.

Examples:
  export LONGRUN_TOKEN=alice-dev-token
  longrun create -type demo.task -input '{"target":"build-42","steps":3}' -wait
  id=$(longrun create -type demo.task -input @input.json -o id)
  longrun get -watch "$id"
  longrun signal "$id" approval -data '{"approved":true}'
  longrun list -state running -all -o table
`

// cli is one run of the command: its streams and what tests replace.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// clock is the client's time (nil: the wall clock); tests inject one that does not wait.
	clock client.Clock
	// interrupts starts delivering the signals that stop a wait, and stop ends that (nil:
	// SIGINT and SIGTERM through os/signal).
	interrupts func() (signals <-chan os.Signal, stop func())
	// isTerminal reports whether w is a terminal (nil: a *os.File on a terminal).
	isTerminal func(w io.Writer) bool
	// httpClient sends the API requests (nil: one with a 30 s timeout per request).
	httpClient *http.Client
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: the exit status of one command line.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&cli{stdin: stdin, stdout: stdout, stderr: stderr}).run(context.Background(), args)
}

// globals are the flags every API command takes, before or after the command.
type globals struct {
	api, token string
	sigv4      bool
	output     string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.api, "api", g.api, "the API's base URL, stage included (LONGRUN_API)")
	fs.StringVar(&g.token, "token", g.token, "bearer token (LONGRUN_TOKEN)")
	fs.BoolVar(&g.sigv4, "sigv4", g.sigv4, "sign requests with SigV4 using the environment's AWS credentials")
	fs.StringVar(&g.output, "o", g.output, "output: json, id or table (default: table on a terminal, json otherwise)")
}

var globalNames = []string{"api", "token", "sigv4", "o"}

// command is an API subcommand.
type command struct {
	name, args, summary string
	// flags declares the command's own flags; run does the work once they and the
	// positional arguments are parsed.
	flags func(fs *flag.FlagSet) runner
}

func (c *cli) commands() []command {
	return []command{
		{"create", "-type T [-input JSON|@FILE|@-] [-key K] [-wait [-timeout D]]", "admit an operation", c.create},
		{"get", "ID [-watch [-timeout D]]", "show an operation, or follow it until it ends", c.get},
		{"wait", "ID [-timeout D]", "follow an operation until it ends (get -watch)", c.wait},
		{"cancel", "ID [-if-version N]", "ask an operation to stop", c.cancel},
		{"signal", "ID NAME [-data JSON|@FILE|@-] [-key K] [-if-version N]", "send an operation a signal its type declares", c.signal},
		{"list", "[-state S] [-type T] [-target PREFIX] [-created-after T] [-created-before T] [-limit N] [-cursor C] [-all]",
			"your operations, newest first", c.list},
		{"history", "ID", "an operation's facts, oldest first", c.history},
		{"types", "[NAME]", "the operation types the API admits", c.types},
		{"resolve", "ID -outcome succeeded|failed|retry -reason R [-if-version N] [-result JSON] [-problem-code C -problem-title T [-problem-detail D]]",
			"operators: settle an operation in outcome_unknown, or have its step run again", c.resolve},
		{"attention", "[-limit N] [-cursor C] [-all]", "operators: every tenant's operations waiting for an operator", c.attention},
		{"stats", "", "operators: the operations in flight and waiting, across tenants", c.stats},
	}
}

func (c *cli) run(ctx context.Context, args []string) int {
	if c.getenv == nil {
		c.getenv = os.Getenv
	}
	g := &globals{api: c.envOr("http://127.0.0.1:8080", "LONGRUN_API", "LONGRUN_API_URL"), token: c.getenv("LONGRUN_TOKEN")}
	fs := flag.NewFlagSet("longrun", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {}
	g.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(c.stdout, usage)
			return exitOK
		}
		fmt.Fprint(c.stderr, "\n"+usage)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprint(c.stderr, usage)
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	switch name {
	case "republish":
		return republish(ctx, rest, c.stdin, c.stdout, c.stderr, newRepublisher)
	case "unknown":
		return unknown(ctx, rest, c.stdout, c.stderr, openTable)
	case "help":
		if len(rest) == 0 {
			fmt.Fprint(c.stdout, usage)
			return exitOK
		}
		switch rest[0] {
		case "republish":
			fmt.Fprint(c.stdout, republishUsage)
			return exitOK
		case "unknown":
			fmt.Fprint(c.stdout, unknownUsage)
			return exitOK
		}
		name, rest = rest[0], []string{"-h"}
	}
	i := slices.IndexFunc(c.commands(), func(cmd command) bool { return cmd.name == name })
	if i < 0 {
		fmt.Fprintf(c.stderr, "longrun: unknown command %q\n\n%s", name, usage)
		return exitUsage
	}
	return c.runCommand(ctx, c.commands()[i], g, rest)
}

func (c *cli) runCommand(ctx context.Context, cmd command, g *globals, args []string) int {
	fs := flag.NewFlagSet("longrun "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {}
	do := cmd.flags(fs)
	g.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(c.stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintln(c.stderr)
		commandUsage(c.stderr, cmd, fs)
		return exitUsage
	}
	x := &invocation{cli: c, g: g, cmd: cmd, fs: fs}
	switch g.output {
	case "", "json", "id", "table":
	default:
		return x.usageError("-o is json, id or table, not %q", g.output)
	}
	if g.output == "" {
		g.output = "json"
		if c.terminal(c.stdout) {
			g.output = "table"
		}
	}
	return do(ctx, x, pos)
}

// parseInterspersed parses flags wherever they are among the positional arguments
// (`get ID -watch` and `get -watch ID` alike); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

func commandUsage(w io.Writer, cmd command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: longrun %s %s\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, cmd.summary)
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(globalNames, f.Name) {
			return
		}
		arg, text := flag.UnquoteUsage(f)
		line := "  -" + f.Name
		if arg != "" {
			line += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(text, "\n", "\n    \t"))
	})
	fmt.Fprint(w, "\nGlobal flags: -api URL, -token T, -sigv4, -o json|id|table (longrun -help: these, output and exit statuses).\n")
}

// invocation is one API command being run.
type invocation struct {
	*cli
	g   *globals
	cmd command
	fs  *flag.FlagSet
	clk *watchClock // the client's clock
}

// usageError reports a wrong command line: exit status 2.
func (x *invocation) usageError(format string, a ...any) int {
	fmt.Fprintf(x.stderr, "longrun %s: %s\n\n", x.cmd.name, fmt.Sprintf(format, a...))
	commandUsage(x.stderr, x.cmd, x.fs)
	return exitUsage
}

// client builds the API client from the global flags; a nil client means the status to exit
// with was already reported.
func (x *invocation) client(ctx context.Context) (*client.Client, int) {
	x.clk = &watchClock{inner: x.clock}
	if x.clk.inner == nil {
		x.clk.inner = client.WallClock()
	}
	opts := &client.ClientOptions{Clock: x.clk, UserAgent: "longrun-cli", HTTPClient: x.httpClient}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	switch {
	case x.g.sigv4:
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			fmt.Fprintf(x.stderr, "longrun: -sigv4: loading the AWS configuration: %v\n", err)
			return nil, exitAPI
		}
		opts.Auth = client.SigV4(cfg)
	case x.g.token != "":
		opts.Auth = client.BearerToken(x.g.token)
	default:
		return nil, x.usageError("no credentials: -token T (or LONGRUN_TOKEN), or -sigv4")
	}
	api, err := client.New(x.g.api, opts)
	if err != nil {
		return nil, x.usageError("-api: %s", strings.TrimPrefix(err.Error(), "longrun: "))
	}
	return api, exitOK
}

func (c *cli) envOr(def string, keys ...string) string {
	for _, k := range keys {
		if v := c.getenv(k); v != "" {
			return v
		}
	}
	return def
}

// defaultInterrupts delivers SIGINT and SIGTERM.
func defaultInterrupts() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}
