package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"time"

	"github.com/longrun-dev/longrun/client/api"
)

// ListOptions filter and page GET /v1/operations. Zero fields are unset.
type ListOptions struct {
	// State lists only operations currently in this state.
	State State
	// Type lists only operations of this type.
	Type string
	// Target lists only operations whose canonical target begins with it ("demo:" for
	// every target of the namespace demo).
	Target string
	// CreatedAfter and CreatedBefore list only operations created at or after
	// CreatedAfter and strictly before CreatedBefore (to the millisecond). A window is
	// cheap: the API reads only the operations created in (about) it.
	CreatedAfter, CreatedBefore time.Time
	// Limit is the page size, 1 to 100; zero is the API's default (20).
	Limit int
	// Cursor starts at the page a previous Page.NextCursor named.
	Cursor string
}

// Page is one page of the caller's operations, newest first.
type Page struct {
	Items []Operation
	// NextCursor names the next page; empty on the last.
	NextCursor string
}

// ErrNoMorePages is Pager.NextPage's answer after the last page.
var ErrNoMorePages = errors.New("longrun: no more pages")

// Pager pages through the caller's operations; it does no I/O until NextPage. It is not
// safe for concurrent use.
type Pager struct {
	c      *Client
	params api.ListOperationsParams
	done   bool
}

// NewListPager returns a Pager over GET /v1/operations with opts (nil: every operation,
// the API's page size).
func (c *Client) NewListPager(opts *ListOptions) *Pager {
	p := &Pager{c: c}
	if opts != nil {
		if opts.State != "" {
			s := api.State(opts.State)
			p.params.State = &s
		}
		if opts.Type != "" {
			t := opts.Type
			p.params.Type = &t
		}
		if opts.Target != "" {
			t := opts.Target
			p.params.Target = &t
		}
		if !opts.CreatedAfter.IsZero() {
			t := opts.CreatedAfter.UTC()
			p.params.CreatedAfter = &t
		}
		if !opts.CreatedBefore.IsZero() {
			t := opts.CreatedBefore.UTC()
			p.params.CreatedBefore = &t
		}
		if opts.Limit != 0 {
			l := opts.Limit
			p.params.Limit = &l
		}
		if opts.Cursor != "" {
			cur := opts.Cursor
			p.params.Cursor = &cur
		}
	}
	return p
}

// More reports whether there is a page NextPage has not returned.
func (p *Pager) More() bool { return !p.done }

// NextPage reads the next page. After an error, More is still true and NextPage reads the
// same page again.
func (p *Pager) NextPage(ctx context.Context) (*Page, error) {
	if p.done {
		return nil, ErrNoMorePages
	}
	params := p.params
	var page Page
	err := p.c.do(ctx, transient, nil, func(ctx context.Context) error {
		resp, body, err := p.c.send(ctx, func() (*http.Request, error) { return api.NewListOperationsRequest(p.c.server, &params) }, nil)
		if err != nil {
			return err
		}
		var list struct {
			Items      []Operation `json:"items"`
			NextCursor *string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("longrun: decoding the list (%d): %w", resp.StatusCode, err)
		}
		page = Page{Items: list.Items}
		if list.NextCursor != nil {
			page.NextCursor = *list.NextCursor
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if page.NextCursor == "" {
		p.done = true
	} else {
		cur := page.NextCursor
		p.params.Cursor = &cur
	}
	return &page, nil
}

// Pages iterates over the pages NextPage reads, stopping after the last one or at the
// first error, which it yields.
func (p *Pager) Pages(ctx context.Context) iter.Seq2[*Page, error] {
	return func(yield func(*Page, error) bool) {
		for p.More() {
			page, err := p.NextPage(ctx)
			if !yield(page, err) || err != nil {
				return
			}
		}
	}
}

// List iterates over the caller's operations, newest first, reading pages as it goes
// (opts as NewListPager's). An error ends it, yielded with a zero Operation:
//
//	for op, err := range c.List(ctx, &client.ListOptions{State: client.StateRunning}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(op.OperationID, op.State)
//	}
func (c *Client) List(ctx context.Context, opts *ListOptions) iter.Seq2[Operation, error] {
	return func(yield func(Operation, error) bool) {
		for page, err := range c.NewListPager(opts).Pages(ctx) {
			if err != nil {
				yield(Operation{}, err)
				return
			}
			for _, op := range page.Items {
				if !yield(op, nil) {
					return
				}
			}
		}
	}
}
