package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/aws/dynamo"
	"github.com/longrun-dev/longrun/internal/core/operation"
)

type pages [][]dynamo.Unknown

func (p pages) UnknownOutcomes(_ context.Context, _ int, after string) ([]dynamo.Unknown, string, error) {
	i := 0
	if after != "" {
		i = int(after[0] - '0')
	}
	next := ""
	if i+1 < len(p) {
		next = string(rune('0' + i + 1))
	}
	return p[i], next, nil
}

func TestUnknownListsEveryTenantsPages(t *testing.T) {
	u := func(tenant, id string) dynamo.Unknown {
		return dynamo.Unknown{Tenant: tenant, Representation: operation.Representation{OperationID: id, State: operation.OutcomeUnknown}}
	}
	open := func(context.Context, string) (unknownLister, error) {
		return pages{{u("acme", "op_1"), u("globex", "op_2")}, {u("acme", "op_3")}}, nil
	}
	var out, errOut bytes.Buffer
	if code := unknown(context.Background(), []string{"-table", "t"}, &out, &errOut, open); code != 0 || strings.Count(out.String(), "\n") != 2 ||
		!strings.Contains(errOut.String(), "-all") {
		t.Fatalf("first page: %d %q %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := unknown(context.Background(), []string{"-table", "t", "-all"}, &out, &errOut, open); code != 0 ||
		!strings.Contains(out.String(), `{"tenant":"globex","operation":{"operationId":"op_2"`) || strings.Count(out.String(), "\n") != 3 {
		t.Fatalf("all: %d %q", code, out.String())
	}
	if code := unknown(context.Background(), nil, &out, &errOut, open); code != 2 {
		t.Fatalf("without a table: %d", code)
	}
}
