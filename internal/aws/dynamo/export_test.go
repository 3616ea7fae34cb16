package dynamo

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// CraftCursor builds a list cursor as a client could, for tests of cursors it tampered with.
func CraftCursor(tenant, principal, filters, after string) string {
	return encodeCursor(cursor{Scope: scopeKey(tenant, principal), Query: filters, After: after})
}

// DueShardOf names the due-index shard an operation id lands in.
func DueShardOf(id string) string { return dueShard(id) }

// ItemSize is the store's own count of an item's billed size.
func ItemSize(item map[string]types.AttributeValue) int { return itemSize(item) }

// BackgroundLimit bounds a request left to finish after its call answered.
const BackgroundLimit = backgroundLimit
