package seal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/seal"
)

func sealer(t *testing.T, key string) *seal.Sealer {
	t.Helper()
	s, err := seal.New([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const key = "0123456789abcdef0123456789abcdef"

func TestASealSurvivesReserialisation(t *testing.T) {
	s := sealer(t, key)
	mac, err := s.Seal(seal.PurposeDecision, "op_1", []byte(`{"next":"wait","request":{"step":2,"state":{"n":1.0,"a":"x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// What Step Functions might hand back: other spacing, member order and number spelling.
	same := `{ "request": {"state": {"a": "x", "n": 1}, "step": 2e0}, "next": "wait" }`
	if err := s.Check(seal.PurposeDecision, "op_1", []byte(same), mac); err != nil {
		t.Fatalf("the same document, re-serialised, was refused: %v", err)
	}
}

func TestASealBindsDocumentPurposeSubjectAndKey(t *testing.T) {
	s := sealer(t, key)
	doc := []byte(`{"next":"work","request":{"operationId":"op_1","step":2}}`)
	mac, err := s.Seal(seal.PurposeDecision, "op_1", doc)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, purpose, subject, doc, mac string
		sealer                           *seal.Sealer
	}{
		{"changed document", seal.PurposeDecision, "op_1", `{"next":"work","request":{"operationId":"op_1","step":3}}`, mac, s},
		{"added member", seal.PurposeDecision, "op_1", `{"next":"work","request":{"operationId":"op_1","step":2},"task":{}}`, mac, s},
		{"other purpose", seal.PurposeStep, "op_1", string(doc), mac, s},
		{"other operation", seal.PurposeDecision, "op_2", string(doc), mac, s},
		{"other key", seal.PurposeDecision, "op_1", string(doc), mac, sealer(t, strings.Repeat("k", 32))},
		{"no seal", seal.PurposeDecision, "op_1", string(doc), "", s},
		{"malformed seal", seal.PurposeDecision, "op_1", string(doc), "not base64!", s},
		{"short seal", seal.PurposeDecision, "op_1", string(doc), mac[:20], s},
		{"not JSON", seal.PurposeDecision, "op_1", `{"next":`, mac, s},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.sealer.Check(c.purpose, c.subject, []byte(c.doc), c.mac)
			if !errors.Is(err, seal.ErrBroken) {
				t.Fatalf("Check = %v, want ErrBroken", err)
			}
		})
	}
	if err := s.Check(seal.PurposeDecision, "op_1", doc, mac); err != nil {
		t.Fatalf("the sealed document itself was refused: %v", err)
	}
}

func TestPurposeAndSubjectCannotTradeCharacters(t *testing.T) {
	s := sealer(t, key)
	a, _ := s.Seal("ab", "c", []byte(`{}`))
	b, _ := s.Seal("a", "bc", []byte(`{}`))
	if a == b {
		t.Fatal(`("ab","c") and ("a","bc") have the same seal`)
	}
}

func TestAShortKeyIsRefused(t *testing.T) {
	if _, err := seal.New([]byte("short")); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
}
