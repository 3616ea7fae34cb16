package ddbmeter

import (
	"encoding/json"
	"fmt"
)

// Table is what the rules need of a table: its key attributes and its global secondary
// indexes.
type Table struct {
	Name    string
	Keys    []string // the partition key, then the sort key if any
	Indexes []Index
}

// Index is a global secondary index: its key attributes and what it projects.
type Index struct {
	Name       string
	Keys       []string
	Projection string   // ALL, KEYS_ONLY or INCLUDE
	NonKey     []string // INCLUDE's attributes
}

// Key is item's primary key.
func (t *Table) Key(item Item) Item {
	key := Item{}
	for _, k := range t.Keys {
		if v, ok := item[k]; ok {
			key[k] = v
		}
	}
	return key
}

// Entry is the index entry item has in ix, nil when item is absent or lacks one of the
// index's key attributes (DynamoDB writes nothing to the index for it): the index keys, the
// table's keys, and the projected attributes.
func (t *Table) Entry(ix Index, item Item) Item {
	if item == nil {
		return nil
	}
	for _, k := range ix.Keys {
		if _, ok := item[k]; !ok {
			return nil
		}
	}
	if ix.Projection == "ALL" {
		return item
	}
	entry := Item{}
	for _, names := range [][]string{ix.Keys, t.Keys, ix.NonKey} {
		for _, k := range names {
			if v, ok := item[k]; ok {
				entry[k] = v
			}
		}
	}
	return entry
}

// Index returns the index named name.
func (t *Table) Index(name string) (Index, bool) {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return ix, true
		}
	}
	return Index{}, false
}

// ParseDescribeTable reads a table's shape from a DescribeTable answer.
func ParseDescribeTable(body []byte) (*Table, error) {
	var out struct {
		Table struct {
			TableName string
			KeySchema []struct {
				AttributeName, KeyType string
			}
			GlobalSecondaryIndexes []struct {
				IndexName string
				KeySchema []struct {
					AttributeName, KeyType string
				}
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("ddbmeter: DescribeTable: %w", err)
	}
	keys := func(schema []struct{ AttributeName, KeyType string }) []string {
		var hash, rng []string
		for _, k := range schema {
			if k.KeyType == "HASH" {
				hash = append(hash, k.AttributeName)
			} else {
				rng = append(rng, k.AttributeName)
			}
		}
		return append(hash, rng...)
	}
	t := &Table{Name: out.Table.TableName, Keys: keys(out.Table.KeySchema)}
	if len(t.Keys) == 0 {
		return nil, fmt.Errorf("ddbmeter: DescribeTable: no key schema in %.200s", body)
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		t.Indexes = append(t.Indexes, Index{Name: g.IndexName, Keys: keys(g.KeySchema),
			Projection: g.Projection.ProjectionType, NonKey: g.Projection.NonKeyAttributes})
	}
	return t, nil
}
