package promtext

import (
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	text := `# HELP a_total A.
# TYPE a_total counter
a_total 12.5
b{x="1",y="q\"uo\\te",z="line\nbreak"} 3 1700000000000
b{x="2"} +Inf
skipped{broken 1
c 1e+06
`
	var got []Sample
	err := Scan(strings.NewReader(text), func(n string) bool { return n != "skipped" }, func(s Sample) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Name != "a_total" || got[0].Value != 12.5 || got[0].Labels != nil || got[3].Value != 1e6 {
		t.Fatalf("samples %+v", got)
	}
	if l := got[1].Labels; l["x"] != "1" || l["y"] != `q"uo\te` || l["z"] != "line\nbreak" || got[1].Value != 3 {
		t.Errorf("labels %q value %v", l, got[1].Value)
	}
	for _, bad := range []string{"m{x=1} 2\n", "m{x=\"1} 2\n", "m\n", "m{} x\n"} {
		if err := Scan(strings.NewReader(bad), func(string) bool { return true }, func(Sample) {}); err == nil || !strings.Contains(err.Error(), "metric m") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
