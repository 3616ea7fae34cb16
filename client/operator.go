package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// TenantOperation is an operation with the tenant it belongs to: what an operator sees
// across tenants (Attention, Stats).
type TenantOperation struct {
	// Tenant is the tenant the operation belongs to.
	Tenant string `json:"tenant"`
	// Operation is its representation.
	Operation Operation `json:"operation"`
}

// AttentionOptions page GET /v1/attention. Zero fields are unset.
type AttentionOptions struct {
	// Limit is the page size, 1 to 100; zero is the API's default (20).
	Limit int
	// Cursor starts at the page a previous AttentionPage.NextCursor named.
	Cursor string
}

// AttentionPage is one page of the attention queue.
type AttentionPage struct {
	// Items are every tenant's operations in outcome_unknown, oldest first.
	Items []TenantOperation `json:"items"`
	// NextCursor names the next page; empty on the last.
	NextCursor string `json:"-"`
}

// Attention reads one page of the attention queue (GET /v1/attention), for operators:
// every tenant's operations in outcome_unknown, oldest first, waiting for Resolve. Anyone
// else gets a *ProblemError with ErrorCodeForbidden. opts may be nil.
func (c *Client) Attention(ctx context.Context, opts *AttentionOptions) (*AttentionPage, error) {
	params := &api.ListAttentionParams{}
	if opts != nil {
		if opts.Limit != 0 {
			l := opts.Limit
			params.Limit = &l
		}
		if opts.Cursor != "" {
			cur := opts.Cursor
			params.Cursor = &cur
		}
	}
	var page AttentionPage
	err := c.do(ctx, transient, nil, func(ctx context.Context) error {
		resp, body, err := c.send(ctx, func() (*http.Request, error) { return api.NewListAttentionRequest(c.server, params) }, nil)
		if err != nil {
			return err
		}
		var list struct {
			Items      []TenantOperation `json:"items"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("longrun: decoding the attention queue (%d): %w", resp.StatusCode, err)
		}
		page = AttentionPage{Items: list.Items}
		if list.NextCursor != nil {
			page.NextCursor = *list.NextCursor
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &page, nil
}

// AttentionAll iterates over the whole attention queue, reading pages as it goes (opts as
// Attention's; its Cursor is where it starts). An error ends it, yielded with a zero
// TenantOperation.
func (c *Client) AttentionAll(ctx context.Context, opts *AttentionOptions) iter.Seq2[TenantOperation, error] {
	return func(yield func(TenantOperation, error) bool) {
		o := AttentionOptions{}
		if opts != nil {
			o = *opts
		}
		for {
			page, err := c.Attention(ctx, &o)
			if err != nil {
				yield(TenantOperation{}, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			o.Cursor = page.NextCursor
		}
	}
}

// Stats is what GET /v1/stats answers: the operations in flight by state, those waiting for
// an operator, and the oldest in flight, across tenants, as of AsOf.
type Stats struct {
	// AsOf is when the API read them.
	AsOf time.Time `json:"asOf"`
	// InFlight counts the operations in flight (not ended, not waiting for an operator) by
	// state.
	InFlight InFlightCounts `json:"inFlight"`
	// OutcomeUnknown counts the operations waiting for an operator.
	OutcomeUnknown int `json:"outcomeUnknown"`
	// OldestInFlight is the earliest-created operation in flight, with its tenant; nil when
	// none is.
	OldestInFlight *TenantOperation `json:"oldestInFlight"`
	// Partial says that the API hit a bound on its work: the counts are lower bounds, and
	// OldestInFlight is the oldest of the operations it read.
	Partial bool `json:"partial"`
}

// InFlightCounts are the operations in each state of work in flight (Stats.InFlight).
type InFlightCounts struct {
	Accepted   int `json:"accepted"`
	Dispatched int `json:"dispatched"`
	Running    int `json:"running"`
	Cancelling int `json:"cancelling"`
}

// Total is how many operations are in flight.
func (n InFlightCounts) Total() int { return n.Accepted + n.Dispatched + n.Running + n.Cancelling }

// Stats reads the operations in flight and waiting for an operator, across tenants (GET
// /v1/stats), for operators; anyone else gets a *ProblemError with ErrorCodeForbidden.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var st Stats
	err := c.do(ctx, transient, nil, func(ctx context.Context) error {
		resp, body, err := c.send(ctx, func() (*http.Request, error) { return api.NewGetStatsRequest(c.server) }, nil)
		if err != nil {
			return err
		}
		st = Stats{}
		if err := json.Unmarshal(body, &st); err != nil {
			return fmt.Errorf("longrun: decoding the stats (%d): %w", resp.StatusCode, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}
