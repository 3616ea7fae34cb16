package dynamo

import (
	"context"

	"github.com/longrun-dev/longrun/internal/service/httpapi"
)

// ListFilters is what a list cursor is bound to besides the scope, for tests that craft
// cursors.
func ListFilters(q httpapi.ListQuery) string { return listFilters(q) }

// StatsWithin is Stats within smaller bounds: perShard operations of each due shard, pages
// pages of the attention index.
func (s *Store) StatsWithin(ctx context.Context, perShard, pages int) (httpapi.Stats, error) {
	return s.stats(ctx, perShard, pages)
}
