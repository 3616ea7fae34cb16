package dynamo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Key design (docs/table-design.md): one table, string keys pk/sk. Partition keys are
// hashes or random ids, so they spread evenly and reveal nothing about callers or keys.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrGSI1PK    = "gsi1pk"
	attrGSI1SK    = "gsi1sk"
	attrExpiresAt = "expires_at" // also the table's TTL attribute

	skIdempotency = "IDEM"
	skLock        = "LOCK"
	skQuota       = "QUOTA"
	skMeta        = "META"
	factPrefix    = "FACT#"

	// IndexByScope lists a caller's operations newest first (gsi1pk = scope, gsi1sk = id).
	IndexByScope = "gsi1"
)

// digest hashes length-prefixed parts, so ("ab","c") and ("a","bc") never collide.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func idempotencyPK(tenant, principal, key string) string {
	return "IDEM#" + digest(tenant, principal, key)
}

func lockPK(tenant, principal, typ, target string) string {
	return "LOCK#" + digest(tenant, principal, typ, target)
}

// quotaPK is one of a tenant's quota counters; each is its own partition, so the counters
// spread over partitions as well as over items.
func quotaPK(tenant string, shard int) string { return "QUOTA#" + digest(tenant, strconv.Itoa(shard)) }

// principalQuotaPK is one of a caller's quota counters within its tenant.
func principalQuotaPK(tenant, principal string, shard int) string {
	return "PQUOTA#" + digest(tenant, principal, strconv.Itoa(shard))
}

func scopeKey(tenant, principal string) string { return "SCOPE#" + digest(tenant, principal) }

func operationPK(id string) string { return "OP#" + id }

func factSK(version int) string { return fmt.Sprintf("%s%08d", factPrefix, version) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
