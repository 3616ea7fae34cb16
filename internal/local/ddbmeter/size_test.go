package ddbmeter

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func item(t *testing.T, wire string) Item {
	t.Helper()
	var it Item
	if err := json.Unmarshal([]byte(wire), &it); err != nil {
		t.Fatal(err)
	}
	return it
}

// Sizes by "DynamoDB item sizes and formats", computed by hand in the comments.
func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		name, wire string
		want       int
	}{
		{"string", `{"pk":{"S":"op#1"}}`, 2 + 4},
		{"utf-8 name and value", `{"ü":{"S":"é€"}}`, 2 + 2 + 3},
		{"number 123: 3 digits", `{"n":{"N":"123"}}`, 1 + (2 + 1)},
		{"number 1000: trailing zeros trimmed", `{"n":{"N":"1000"}}`, 1 + (1 + 1)},
		{"number -0.00120: sign, leading and trailing zeros aside", `{"n":{"N":"-0.00120"}}`, 1 + (1 + 1)},
		{"number zero", `{"n":{"N":"0"}}`, 1 + 1},
		{"number 1796032805: 10 digits", `{"n":{"N":"1796032805"}}`, 1 + (5 + 1)},
		{"number 38 digits", `{"n":{"N":"12345678901234567890123456789012345678"}}`, 1 + (19 + 1)},
		{"number with exponent", `{"n":{"N":"1.5E+3"}}`, 1 + (1 + 1)},
		{"binary: raw bytes, not base64", `{"b":{"B":"aGVsbG8="}}`, 1 + 5},
		{"boolean", `{"ok":{"BOOL":false}}`, 2 + 1},
		{"null", `{"no":{"NULL":true}}`, 2 + 1},
		{"list: 3 + elements + 1 each", `{"l":{"L":[{"S":"ab"},{"N":"1"}]}}`, 1 + (3 + (1 + 2) + (1 + 2))},
		{"empty list", `{"l":{"L":[]}}`, 1 + 3},
		{"map: names count", `{"m":{"M":{"a":{"S":"xyz"},"bb":{"BOOL":true}}}}`, 1 + (3 + (1 + 1 + 3) + (1 + 2 + 1))},
		{"empty map", `{"m":{"M":{}}}`, 1 + 3},
		{"nested", `{"m":{"M":{"l":{"L":[{"M":{}}]}}}}`, 1 + (3 + 1 + 1 + (3 + 1 + 3))},
		{"string set", `{"ss":{"SS":["a","bcd"]}}`, 2 + (1 + 3)},
		{"number set", `{"ns":{"NS":["1","22","333"]}}`, 2 + (2 + 2 + 3)},
		{"binary set", `{"bs":{"BS":["AAE=","AAECAw=="]}}`, 2 + (2 + 4)},
		{"whole item", `{"pk":{"S":"op#1"},"n":{"N":"123"},"b":{"B":"aGVsbG8="},"ok":{"BOOL":true},` +
			`"l":{"L":[{"S":"ab"},{"N":"1"}]},"m":{"M":{"a":{"S":"xyz"},"bb":{"BOOL":true}}}}`, 6 + 4 + 6 + 3 + 10 + 13},
	} {
		if got := Size(item(t, tc.wire)); got != tc.want {
			t.Errorf("%s: Size(%s) = %d, want %d", tc.name, tc.wire, got, tc.want)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct{ size, write, read int }{
		{0, 1, 1}, {1, 1, 1}, {1024, 1, 1}, {1025, 2, 1}, {1600, 2, 1}, {4096, 4, 1}, {4097, 5, 2}, {10 * 1024, 10, 3},
	} {
		if w, r := WriteUnits(tc.size), ReadUnits(tc.size); w != tc.write || r != tc.read {
			t.Errorf("%d bytes: %d write and %d read units, want %d and %d", tc.size, w, r, tc.write, tc.read)
		}
	}
}

// pad is an attribute whose item contribution is n bytes ("pad" and n-3 bytes).
func pad(n int) Value { s := strings.Repeat("x", n-3); return Value{S: &s} }

func str(s string) Value { return Value{S: &s} }

func testTable() *Table {
	return &Table{Name: "t", Keys: []string{"pk", "sk"}, Indexes: []Index{
		{Name: "all", Keys: []string{"gk", "gs"}, Projection: "ALL"},
		{Name: "inc", Keys: []string{"hk"}, Projection: "INCLUDE", NonKey: []string{"inc"}},
		{Name: "keys", Keys: []string{"kk"}, Projection: "KEYS_ONLY"},
	}}
}

// base is a 6-byte item (pk "a", sk "x"), plus what more gives.
func base(more map[string]Value) Item {
	it := Item{"pk": str("a"), "sk": str("x")}
	for k, v := range more {
		it[k] = v
	}
	return it
}

func TestWriteUsage(t *testing.T) {
	tb := testTable()
	big := base(map[string]Value{"pad": pad(1500)})  // 1506 bytes: 2 KB
	huge := base(map[string]Value{"pad": pad(2100)}) // 2106 bytes: 3 KB
	inAll := func(gk string, n int) Item {           // in index "all": 6 + 3 + 3 + n bytes
		return base(map[string]Value{"gk": str(gk), "gs": str("s"), "pad": pad(n)})
	}
	for _, tc := range []struct {
		name string
		w    Write
		want Usage
	}{
		{"put of a new small item", Write{After: base(nil)}, Usage{WRU: 1}},
		{"put replacing a 2 KB item by a small one: the larger counts", Write{Before: big, After: base(nil)}, Usage{WRU: 2}},
		{"update growing it to 3 KB", Write{Before: big, After: huge}, Usage{WRU: 3}},
		{"delete of a 3 KB item", Write{Before: huge}, Usage{WRU: 3}},
		{"delete of nothing", Write{}, Usage{WRU: 1}},
		{"transactional put: 2 per started KB", Write{After: big, Transactional: true}, Usage{WRU: 4}},
		{"condition check of a 3 KB item", Write{Before: huge, Check: true, Transactional: true}, Usage{WRU: 6}},
		{"condition check of nothing", Write{Check: true, Transactional: true}, Usage{WRU: 2}},
		{"failed condition on a 3 KB item: its size", Write{Before: huge, Failed: true}, Usage{WRU: 3}},
		{"failed condition, no item: one unit", Write{Failed: true}, Usage{WRU: 1}},
		{"cancelled transaction item of 2 KB", Write{Before: big, Failed: true, Transactional: true}, Usage{WRU: 4}},
		{"failed writes touch no index", Write{Before: inAll("g", 1500), Failed: true}, Usage{WRU: 2}},
		{"entering an ALL index: the whole item", Write{After: inAll("g", 1100)}, Usage{WRU: 2, IndexWRU: 2}},
		{"entering it in a transaction: the index write is not doubled", Write{After: inAll("g", 1100), Transactional: true},
			Usage{WRU: 4, IndexWRU: 2}},
		{"leaving it: a delete of the old entry", Write{Before: inAll("g", 1100), After: base(nil)}, Usage{WRU: 2, IndexWRU: 2}},
		{"index key changed: a delete and a put", Write{Before: inAll("g", 100), After: inAll("h", 1100)}, Usage{WRU: 2, IndexWRU: 1 + 2}},
		{"attribute changed in place in an ALL index", Write{Before: inAll("g", 100), After: inAll("g", 200)}, Usage{WRU: 1, IndexWRU: 1}},
		{"rewritten unchanged: no index write", Write{Before: inAll("g", 100), After: inAll("g", 100)}, Usage{WRU: 1}},
		// Index "inc" holds hk, pk, sk and inc: its entry stays 13 bytes whatever pad is.
		{"INCLUDE: a projected attribute changed",
			Write{Before: base(map[string]Value{"hk": str("h"), "inc": str("1")}), After: base(map[string]Value{"hk": str("h"), "inc": str("2")})},
			Usage{WRU: 1, IndexWRU: 1}},
		{"INCLUDE: only an attribute it does not project changed",
			Write{Before: base(map[string]Value{"hk": str("h"), "pad": pad(100)}), After: base(map[string]Value{"hk": str("h"), "pad": pad(2000)})},
			Usage{WRU: 2}},
		{"entering INCLUDE and KEYS_ONLY indexes: their small entries",
			Write{After: base(map[string]Value{"hk": str("h"), "kk": str("k"), "pad": pad(3000)})}, Usage{WRU: 3, IndexWRU: 1 + 1}},
	} {
		if got := tb.WriteUsage(tc.w); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestEntry(t *testing.T) {
	tb := testTable()
	it := base(map[string]Value{"hk": str("h"), "inc": str("1"), "other": str("o")})
	entry := tb.Entry(tb.Indexes[1], it)
	if len(entry) != 4 || entry["other"].S != nil || Size(entry) != 13 {
		t.Fatalf("INCLUDE entry %v (%d bytes), want hk, pk, sk and inc (13 bytes)", entry, Size(entry))
	}
	if tb.Entry(tb.Indexes[0], it) != nil {
		t.Fatal("an item without the index's keys has an entry")
	}
	if e := tb.Entry(tb.Indexes[2], base(map[string]Value{"kk": str("k"), "x": str("y")})); len(e) != 3 {
		t.Fatalf("KEYS_ONLY entry %v", e)
	}
}

func TestReadUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Read
		want float64
	}{
		{"strongly consistent 5000 bytes", Read{Sizes: []int{5000}, Consistency: Strong}, 2},
		{"eventually consistent 5000 bytes", Read{Sizes: []int{5000}}, 1},
		{"eventually consistent, nothing found", Read{Sizes: []int{0}}, 0.5},
		{"transactional 500 bytes", Read{Sizes: []int{500}, Consistency: Transactional}, 2},
		// The guide's BatchGetItem example: 1.5 KB and 6.5 KB count as 4 KB + 8 KB.
		{"batch: each item rounded", Read{Sizes: []int{1536, 6656}, Consistency: Strong}, 3},
		// The guide's Query example: 40.8 KB in all rounds to 44 KB.
		{"query: the sum rounded", Read{Sizes: []int{41779}, Consistency: Strong, Summed: true}, 11},
		// The guide's index example: 8 entries of 2000 bytes, eventually consistent.
		{"index query", Read{Sizes: []int{2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}, Summed: true}, 2},
		{"query matching nothing", Read{Consistency: Strong, Summed: true}, 1},
	} {
		if got := ReadUsage(tc.r).RRU; got != tc.want {
			t.Errorf("%s: %v RRU, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseDescribeTable(t *testing.T) {
	tb, err := ParseDescribeTable([]byte(`{"Table":{"TableName":"t","KeySchema":[{"AttributeName":"sk","KeyType":"RANGE"},{"AttributeName":"pk","KeyType":"HASH"}],
		"GlobalSecondaryIndexes":[{"IndexName":"due","KeySchema":[{"AttributeName":"s","KeyType":"HASH"},{"AttributeName":"at","KeyType":"RANGE"}],
		"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["version"]}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tb.Keys, ",") != "pk,sk" || len(tb.Indexes) != 1 || strings.Join(tb.Indexes[0].Keys, ",") != "s,at" ||
		tb.Indexes[0].Projection != "INCLUDE" || tb.Indexes[0].NonKey[0] != "version" {
		t.Fatalf("%+v", tb)
	}
	if _, err := ParseDescribeTable([]byte(`{"Table":{}}`)); err == nil {
		t.Fatal("a table without keys parsed")
	}
}

func TestCaller(t *testing.T) {
	for ua, want := range map[string]string{
		"aws-sdk-go-v2/1.41.0 ua/2.1 os/linux lang/go#1.26.0 md/GOOS#linux api/dynamodb#1.53.0 app/worker-demo-task m/E,g": "worker-demo-task",
		"aws-sdk-go-v2/1.41.0 ua/2.1 os/linux": "",
		"":                                     "",
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("User-Agent", ua)
		if got := Caller(r); got != want {
			t.Errorf("%q: %q, want %q", ua, got, want)
		}
	}
}
