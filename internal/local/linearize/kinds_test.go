package linearize

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/longrun-dev/longrun/internal/core/operation"
)

// kinds must list every Kind constant of internal/core/operation: the package has no list,
// so this reads its source.
func TestKindsListsEveryKindOfTheOperationPackage(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../core/operation/operation.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []operation.Kind
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if typ, ok := spec.Type.(*ast.Ident); !ok || typ.Name != "Kind" {
			return true
		}
		for _, v := range spec.Values {
			if lit, ok := v.(*ast.BasicLit); ok {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, operation.Kind(s))
			}
		}
		return true
	})
	listed := kinds()
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) < 9 || !slices.Equal(declared, listed) {
		t.Fatalf("operation.go declares %v; kinds lists %v", declared, listed)
	}
}
