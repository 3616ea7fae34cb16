package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/longrun-dev/longrun/client"
)

// history is `longrun history ID`: an operation's facts, oldest first.
func (c *cli) history(fs *flag.FlagSet) runner {
	return func(ctx context.Context, x *invocation, pos []string) int {
		if len(pos) != 1 {
			return x.usageError("takes one operation id")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		h, err := api.History(ctx, pos[0])
		if err != nil {
			return x.fail(err)
		}
		switch x.g.output {
		case "json":
			writeJSON(x.stdout, h)
		case "id":
			fmt.Fprintln(x.stdout, h.OperationID)
		default:
			x.historyTable(h)
		}
		return exitOK
	}
}

func (x *invocation) historyTable(h *client.History) {
	actors := false
	for _, e := range h.Entries {
		actors = actors || e.Actor != ""
	}
	tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
	head := "VERSION\tAT\tKIND\tSTATE\tBY"
	if actors {
		head += "\tACTOR"
	}
	fmt.Fprintln(tw, head+"\tDETAIL")
	for _, e := range h.Entries {
		line := fmt.Sprintf("%d\t%s\t%s\t%s\t%s", e.Version, e.At.UTC().Format("2006-01-02T15:04:05.000Z"), e.Kind, e.State, e.By)
		if actors {
			line += "\t" + cell(e.Actor)
		}
		fmt.Fprintln(tw, line+"\t"+cell(entryDetail(e)))
	}
	_ = tw.Flush()
}

// entryDetail is what an entry says beyond its kind and state, in a few words.
func entryDetail(e client.HistoryEntry) string {
	var parts []string
	if e.StepStarted > 0 {
		parts = append(parts, "step "+strconv.Itoa(e.StepStarted)+" sent")
	}
	if e.Retry != nil {
		parts = append(parts, fmt.Sprintf("step %d runs again (attempt %d)", e.Retry.Step, e.Retry.Attempt))
	}
	if e.Signal != nil {
		var data any
		_ = json.Unmarshal(e.Signal.Data, &data)
		b, _ := json.Marshal(data)
		parts = append(parts, "signal "+oneLine(e.Signal.Name)+" "+string(b))
	}
	if e.Awaiting != nil {
		parts = append(parts, awaiting(client.Operation{Awaiting: e.Awaiting}))
	}
	if e.WaitingUntil != nil {
		parts = append(parts, "waits until "+timestamp(*e.WaitingUntil))
	}
	if e.Progress != nil && e.Kind == client.FactProgress && e.StepStarted == 0 {
		parts = append(parts, stepsDone(*e.Progress, " steps")+" done")
		if e.Progress.Message != nil {
			parts = append(parts, strconv.Quote(oneLine(*e.Progress.Message)))
		}
	}
	if e.Problem != nil {
		parts = append(parts, e.Problem.Code+": "+oneLine(e.Problem.Detail))
	}
	if e.Reason != "" {
		parts = append(parts, "reason: "+oneLine(e.Reason))
	}
	return strings.Join(parts, "; ")
}

// attention is `longrun attention`: the API's queue of every tenant's unknown outcomes, for
// operators. (`longrun unknown` reads the same from the table, with AWS credentials.)
func (c *cli) attention(fs *flag.FlagSet) runner {
	limit := fs.Int("limit", 0, "operations per page, 1 to 100 (default: the API's, 20)")
	cursor := fs.String("cursor", "", "start at this page (the cursor a previous attention printed)")
	all := fs.Bool("all", false, "every page, not just the first")
	return func(ctx context.Context, x *invocation, pos []string) int {
		switch {
		case len(pos) > 0:
			return x.usageError("takes no arguments, got %q", pos)
		case *limit < 0 || *limit > 100:
			return x.usageError("-limit is 1 to 100")
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		items, more := []client.TenantOperation{}, ""
		opts := &client.AttentionOptions{Limit: *limit, Cursor: *cursor}
		for {
			page, err := api.Attention(ctx, opts)
			if err != nil {
				return x.fail(err)
			}
			items = append(items, page.Items...)
			if page.NextCursor == "" {
				break
			}
			if !*all {
				more = page.NextCursor
				break
			}
			opts.Cursor = page.NextCursor
		}
		x.printTenantOperations(items)
		if more != "" {
			fmt.Fprintf(x.stderr, "longrun: more operations follow: -cursor %s for the next page, -all for every page\n", more)
		}
		return exitOK
	}
}

func (x *invocation) printTenantOperations(items []client.TenantOperation) {
	switch x.g.output {
	case "json":
		writeJSON(x.stdout, items)
	case "id":
		for _, it := range items {
			fmt.Fprintln(x.stdout, it.Operation.OperationID)
		}
	default:
		if len(items) == 0 {
			fmt.Fprintln(x.stderr, "longrun: no operations wait for an operator")
			return
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tID\tTYPE\tTARGET\tSTATE\tVERSION\tSINCE")
		for _, it := range items {
			op := it.Operation
			state := string(op.State)
			if op.Problem != nil && op.Problem.Code != "" {
				state += " (" + op.Problem.Code + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", cell(it.Tenant), op.OperationID, cell(op.Type), cell(op.Target), state,
				op.Version, cell(timestamp(op.UpdatedAt)))
		}
		_ = tw.Flush()
	}
}

// stats is `longrun stats`: what is in flight and what waits for an operator, across
// tenants, for operators.
func (c *cli) stats(fs *flag.FlagSet) runner {
	return func(ctx context.Context, x *invocation, pos []string) int {
		if len(pos) > 0 {
			return x.usageError("takes no arguments, got %q", pos)
		}
		api, code := x.client(ctx)
		if api == nil {
			return code
		}
		st, err := api.Stats(ctx)
		if err != nil {
			return x.fail(err)
		}
		switch x.g.output {
		case "json":
			writeJSON(x.stdout, st)
		case "id":
			if st.OldestInFlight != nil {
				fmt.Fprintln(x.stdout, st.OldestInFlight.Operation.OperationID)
			}
		default:
			tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
			n := st.InFlight
			fmt.Fprintf(tw, "as of\t%s\n", timestamp(st.AsOf))
			fmt.Fprintf(tw, "in flight\t%d (accepted %d, dispatched %d, running %d, cancelling %d)\n", n.Total(), n.Accepted, n.Dispatched, n.Running, n.Cancelling)
			fmt.Fprintf(tw, "outcome unknown\t%d\n", st.OutcomeUnknown)
			oldest := "-"
			if o := st.OldestInFlight; o != nil {
				oldest = fmt.Sprintf("%s (%s, %s, %s, created %s)", o.Operation.OperationID, cell(o.Tenant), cell(o.Operation.Type), o.Operation.State,
					timestamp(o.Operation.CreatedAt))
			}
			fmt.Fprintf(tw, "oldest in flight\t%s\n", oldest)
			_ = tw.Flush()
			if st.Partial {
				fmt.Fprintln(x.stderr, "longrun: partial: the API hit a bound on its work; the counts are lower bounds")
			}
		}
		return exitOK
	}
}
