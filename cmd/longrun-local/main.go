// Command longrun-local runs the whole longrun stack on this machine (`make run`): the API
// on http://127.0.0.1:8080/v1 and an AWS edge on http://127.0.0.1:4566 serving DynamoDB
// Local, Lambda, Step Functions and SQS. Ctrl-C stops it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/longrun-dev/longrun/internal/local/apigateway"
	"github.com/longrun-dev/longrun/internal/local/devstack"
)

func main() {
	api := flag.String("api", "127.0.0.1:8080", "address of the API")
	tokensFile := flag.String("tokens", "", "JSON file of bearer tokens: {\"token\": {\"tenant\": …, \"principal\": …}} (default: the contract's dev tokens)")
	quiet := flag.Bool("quiet", false, "do not print the functions' logs")
	flag.Parse()

	tokens := apigateway.DefaultTokens()
	if *tokensFile != "" {
		var err error
		if tokens, err = apigateway.LoadTokens(*tokensFile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := devstack.Options{APIAddr: *api, Tokens: tokens, Log: log, Output: os.Stderr}
	if *quiet {
		opts.Output = nil
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err == nil {
		err = devstack.DivertEmulatorStdout(null)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	started := time.Now()
	stack, err := devstack.Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(out, "\nlongrun local stack is up (%.1fs)\n", time.Since(started).Seconds())
	fmt.Fprintf(out, "  API        %s/v1\n", stack.APIURL)
	fmt.Fprintf(out, "  AWS edge   %s   (DynamoDB Local, Lambda, Step Functions, SQS, EventBridge)\n", stack.EdgeURL)
	fmt.Fprintf(out, "  table      %s\n", stack.Table)
	var toks []string
	for t := range tokens {
		toks = append(toks, t)
	}
	sort.Strings(toks)
	for _, t := range toks {
		role := ""
		if tokens[t].Role != "" {
			role = ", " + tokens[t].Role
		}
		fmt.Fprintf(out, "  token      Authorization: Bearer %s   (tenant %s, principal %s%s)\n", t, tokens[t].Tenant, tokens[t].Principal, role)
	}

	fmt.Fprintf(out, "  events     %s   (an SQS queue with every event published on the bus)\n", stack.EventsQueueURL)
	fmt.Fprintf(out, "Ctrl-C stops it.\n\n")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping…")
	stack.Close()
}
