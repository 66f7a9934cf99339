package urlparam_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxComplexity bounds the cyclomatic complexity of a sink's ParseURL and
// Check: parameters are declared in a urlparam.Set, and what is left of a
// sink's URL reading is its own rules, in small functions.
const maxComplexity = 15

// TestURLFuncsSimple computes the cyclomatic complexity of every function
// or method named ParseURL or Check under sinks/ and fails above
// maxComplexity.
func TestURLFuncsSimple(t *testing.T) {
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || (fn.Name.Name != "ParseURL" && fn.Name.Name != "Check") {
				continue
			}
			seen++
			if c := complexity(fn); c > maxComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, over %d: declare its parameters in a urlparam.Set and move its own rules to small functions",
					fset.Position(fn.Pos()), fn.Name.Name, c, maxComplexity)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Errorf("found %d ParseURL and Check functions under sinks/, want the sinks' (at least 10)", seen)
	}
}

// complexity is 1 plus the decision points of fn's body, function
// literals included: if, for, range, each non-default case and select
// case, && and ||.
func complexity(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if n.List != nil {
				c++
			}
		case *ast.CommClause:
			if n.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND || n.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

func TestComplexityCounts(t *testing.T) {
	src := `package p
func F(a, b bool, xs []int) {
	if a && b || !a {
	}
	for range xs {
	}
	switch {
	case a:
	case b:
	default:
	}
	_ = func() { for {} }
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := complexity(f.Decls[0].(*ast.FuncDecl)); c != 8 {
		t.Errorf("complexity %d, want 8", c)
	}
}
