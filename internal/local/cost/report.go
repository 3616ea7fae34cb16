package cost

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// Summary is the report's last line, in the one format issue #14 fixes.
func (r Report) Summary() string {
	p := r.PerMillion
	return fmt.Sprintf("cost: $%.2f per million operations (Step Functions $%.2f, DynamoDB $%.2f, API Gateway $%.2f, Lambda $%.2f, other $%.2f)",
		p.Total, p.StepFunctions, p.DynamoDB, p.APIGateway, p.Lambda, p.Other)
}

// Write prints the report as a table by component, units per operation beside dollars per
// million operations, then notes, then Summary as the last line.
func (r Report) Write(w io.Writer) error {
	u, p := r.PerOperation, r.PerMillion
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	row := func(name, units string, usd float64) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, units, money(usd))
	}
	sub := func(name, units string) { fmt.Fprintf(tw, "  %s\t%s\t\n", name, units) }
	fmt.Fprintf(tw, "component\tunits per operation\t$ per million operations\n")
	row("API Gateway", fmt.Sprintf("%.2f REST requests", u.APIRequests), p.APIGateway)
	row("Lambda", fmt.Sprintf("%.2f invocations, %.4f GB-s (%.1f ms measured, %.1f ms of it the meter's; %.1f ms priced)",
		u.Invocations, u.GBSeconds, u.MeasuredMs, u.OverheadMs, u.BilledMs), p.Lambda)
	for _, f := range r.Functions {
		if f.Invocations == 0 {
			continue
		}
		sub(f.Name, fmt.Sprintf("%.2f × %d MB, %.1f ms priced each, %.4f GB-s ($%.2f)", f.Invocations, f.MemoryMB, f.BilledMs/f.Invocations, f.GBSeconds, f.USD))
	}
	row("Step Functions", fmt.Sprintf("%.2f Standard transitions (%.2f of them retries) in %.2f executions", u.Transitions, u.Retries, u.Executions), p.StepFunctions)
	row("DynamoDB", fmt.Sprintf("%.2f WRU (%.2f table, %.2f indexes), %.2f RRU", u.WRU+u.IndexWRU, u.WRU, u.IndexWRU, u.RRU), p.DynamoDB)
	for _, op := range slices.Sorted(maps.Keys(r.ByCall)) {
		c := r.ByCall[op]
		if c.Usage == (Call{}.Usage) {
			continue
		}
		sub(op, fmt.Sprintf("%.2f calls: %.2f WRU, %.2f index WRU, %.2f RRU", c.Calls, c.WRU, c.IndexWRU, c.RRU))
	}
	var by []string
	for _, fn := range slices.Sorted(maps.Keys(r.ByFunction)) {
		c, name := r.ByFunction[fn], fn
		if name == "" {
			name = "others"
		}
		by = append(by, fmt.Sprintf("%s %.1f+%.1f WRU %.1f RRU", name, c.WRU, c.IndexWRU, c.RRU))
	}
	if len(by) > 0 {
		sub("by function", strings.Join(by, ", "))
	}
	row("other", "EventBridge, SQS, CloudWatch Logs", p.Other)
	sub("EventBridge", fmt.Sprintf("%.2f events ($%.2f)", u.Events, p.EventBridge))
	sub("SQS", fmt.Sprintf("%.2f requests, %.2f messages ($%.2f)", u.SQSRequests, u.SQSMessages, p.SQS))
	sub("CloudWatch Logs", fmt.Sprintf("%.0f bytes: %.0f functions', %.0f Lambda platform, %.0f API access ($%.2f)",
		u.LogBytes(), u.AppLogBytes, u.PlatformLogBytes, u.AccessLogBytes, p.Logs))
	row("total", "", p.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintln(w, "note:", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

func money(usd float64) string { return fmt.Sprintf("%12.2f", usd) }
