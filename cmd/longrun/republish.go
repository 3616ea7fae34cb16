package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/aws/eventbridge"
	"github.com/longrun-dev/longrun/internal/service/notify"
)

const republishUsage = `usage: longrun republish [-table T] [-bus B] ID... | -

Publishes again every "Operation State Changed" event of the operations named (or, with -,
of those named one per line on stdin), rebuilt from their facts exactly as the notifier
builds them, each operation's in version order. Subscribers deduplicate on (operationId,
version), so republishing what they already have is harmless. Use it when the notifier's
event source mapping gave up on a batch (docs/lifecycle.md, "Events").

Not an API call: it reads the table and writes to the bus with the AWS credentials of the
environment (dynamodb:Query on the table, events:PutEvents on the bus; AWS_REGION,
AWS_ENDPOINT_URL… as usual). Prints {"operationId","versions"} per operation.
`

// newRepublisher wires the notifier to the table and bus with the environment's credentials.
func newRepublisher(ctx context.Context, table, bus string) (*notify.Notifier, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = os.Getenv("LONGRUN_DYNAMODB_SKIP_CRC32") == "true" // DynamoDB Local
	})
	return &notify.Notifier{Bus: eventbridge.NewBus(cfg, bus), Facts: dynamo.New(client, table).Facts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil
}

// republish is the operator's command: it needs AWS access to the table and the bus, not
// the API. Exit status 1 when any operation could not be republished in full.
// Ids come from args or, with "-", from stdin; open wires the notifier (newRepublisher,
// or a fake in tests).
func republish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer,
	open func(ctx context.Context, table, bus string) (*notify.Notifier, error)) int {
	fs := flag.NewFlagSet("republish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", os.Getenv("LONGRUN_TABLE"), "the stage's table (LONGRUN_TABLE)")
	bus := fs.String("bus", os.Getenv("LONGRUN_EVENT_BUS"), "the stage's event bus (LONGRUN_EVENT_BUS)")
	fs.Usage = func() {
		fmt.Fprint(stderr, republishUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ids := fs.Args()
	if len(ids) == 1 && ids[0] == "-" {
		ids = nil
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if id := strings.TrimSpace(sc.Text()); id != "" {
				ids = append(ids, id)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintln(stderr, "longrun republish:", err)
			return 2
		}
	}
	if len(ids) == 0 || *table == "" || *bus == "" {
		fmt.Fprintln(stderr, "longrun republish: operation ids, -table and -bus are required")
		fs.Usage()
		return 2
	}
	n, err := open(ctx, *table, *bus)
	if err != nil {
		fmt.Fprintln(stderr, "longrun republish:", err)
		return 1
	}
	code := 0
	for _, id := range ids {
		versions, err := n.Republish(ctx, id)
		out, _ := json.Marshal(struct {
			OperationID string `json:"operationId"`
			Versions    []int  `json:"versions"`
		}{id, append([]int{}, versions...)})
		fmt.Fprintf(stdout, "%s\n", out)
		if err != nil {
			fmt.Fprintf(stderr, "longrun republish: %s: %v\n", id, err)
			code = 1
		}
	}
	return code
}
