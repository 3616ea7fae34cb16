package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
)

const unknownUsage = `usage: longrun unknown [-table T] [-limit N] [-all]

Lists the operations waiting for an operator (outcome_unknown), every tenant's, oldest first,
one JSON object per line: {"tenant", "operation"}. Settle each with longrun resolve after
finding out what its work did (docs/lifecycle.md, "Unknown outcomes and repair").

Not an API call: it reads the table's attention index with the AWS credentials of the
environment (dynamodb:Query on the table's attention index).
`

// unknownLister is the part of the store the command reads.
type unknownLister interface {
	UnknownOutcomes(ctx context.Context, limit int, after string) ([]dynamo.Unknown, string, error)
}

// openTable is the store of the table named, reached with the environment's credentials.
func openTable(ctx context.Context, table string) (unknownLister, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = os.Getenv("LONGRUN_DYNAMODB_SKIP_CRC32") == "true" // DynamoDB Local
	})
	return dynamo.New(client, table), nil
}

// unknown is the operator's list of operations in outcome_unknown.
func unknown(ctx context.Context, args []string, stdout, stderr io.Writer, open func(context.Context, string) (unknownLister, error)) int {
	fs := flag.NewFlagSet("unknown", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", os.Getenv("LONGRUN_TABLE"), "the stage's table (LONGRUN_TABLE)")
	limit := fs.Int("limit", 50, "operations per page")
	all := fs.Bool("all", false, "every page, not just the first")
	fs.Usage = func() {
		fmt.Fprint(stderr, unknownUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *table == "" || *limit < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "longrun unknown: -table is required, -limit positive, and nothing else")
		fs.Usage()
		return 2
	}
	store, err := open(ctx, *table)
	if err != nil {
		fmt.Fprintln(stderr, "longrun unknown:", err)
		return 1
	}
	after := ""
	for {
		items, next, err := store.UnknownOutcomes(ctx, *limit, after)
		if err != nil {
			fmt.Fprintln(stderr, "longrun unknown:", err)
			return 1
		}
		for _, u := range items {
			line, _ := json.Marshal(struct {
				Tenant    string `json:"tenant"`
				Operation any    `json:"operation"`
			}{u.Tenant, u.Representation})
			fmt.Fprintf(stdout, "%s\n", line)
		}
		if next == "" || !*all {
			if next != "" {
				fmt.Fprintln(stderr, "longrun unknown: more follow; -all lists them")
			}
			return 0
		}
		after = next
	}
}
