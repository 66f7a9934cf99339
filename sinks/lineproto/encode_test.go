package lineproto

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/soakd/soakd/sources"
)

type fixedTags [][]string // [device][tag]

func (f fixedTags) AppendTag(dst []byte, d uint32, tag int) []byte { return append(dst, f[d][tag]...) }

func TestEncoderCachesTagSetsAndSwitchesSchemas(t *testing.T) {
	t.Parallel()
	tags := fixedTags{{"a b", "x,y"}, {"c=d", ""}}
	s1 := &sources.Schema{Measurement: "m 1", TagKeys: []string{"k1", "k 2"}, Tags: tags,
		Fields: []sources.Field{{Name: "i", Kind: sources.Int}, {Name: "f", Kind: sources.Float, Decimals: 2}}}
	s2 := &sources.Schema{Measurement: "m2", TagKeys: []string{"k1"}, Tags: tags,
		Fields: []sources.Field{{Name: "v", Kind: sources.Int}}}
	t1, t2 := sources.NewTable(s1), sources.NewTable(s2)
	for d := uint32(0); d < 2; d++ {
		t1.Device = append(t1.Device, d)
		t1.Time = append(t1.Time, 1000+int64(d))
		t1.Ints[0] = append(t1.Ints[0], int64(d))
		t1.Floats[1] = append(t1.Floats[1], 1.5)
		t2.Device = append(t2.Device, d)
		t2.Time = append(t2.Time, 1000)
		t2.Ints[0] = append(t2.Ints[0], -7)
	}
	t1.SetNull(0, 1)
	t1.PadNulls()
	want := strings.Join([]string{
		`m\ 1,k1=a\ b,k\ 2=x\,y i=0i,f=1.5 1000`,
		`m2,k1=a\ b v=-7i 1000`,
		`m\ 1,k1=c\=d f=1.5 1001`,
		`m2,k1=c\=d v=-7i 1000`,
	}, "\n") + "\n"
	var e Encoder
	for pass := 0; pass < 3; pass++ { // first pass fills the caches, the others use them
		var buf []byte
		for i := 0; i < 2; i++ {
			buf, _ = e.AppendRow(buf, t1, i)
			buf, _ = e.AppendRow(buf, t2, i)
		}
		if string(buf) != want {
			t.Fatalf("pass %d:\n%s\nwant\n%s", pass, buf, want)
		}
	}
	var cold Encoder
	if got := cold.AppendTable(nil, t1); !bytes.Equal(got, e.AppendTable(nil, t1)) {
		t.Fatalf("cached and fresh encoders differ:\n%s", got)
	}
}

// appendInt writes what strconv does, on both sides of each of its
// digit-by-digit cases.
func TestAppendIntAsStrconv(t *testing.T) {
	t.Parallel()
	vals := []int64{math.MinInt64, math.MaxInt64, -1, -10, -99, -100}
	for v := int64(0); v <= 10001; v++ {
		vals = append(vals, v)
	}
	for _, v := range vals {
		if got, want := string(appendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
}

// With SortTags each line's tags come sorted bytewise by their escaped
// keys, as InfluxDB keeps them ("Z" < `a\=b` < "datacenter" < ... <
// "region"); an empty tag value is still left out. Without it the schema's
// order stays (tsbs_generate_data's).
func TestEncoderSortTags(t *testing.T) {
	t.Parallel()
	tags := fixedTags{{"host_0", "eu-west-1", "eu-west-1a", "x y", "v,1", "z"}, {"host_1", "us-east-1", "", "x", "v", "z"}}
	s := &sources.Schema{Measurement: "cpu", TagKeys: []string{"hostname", "region", "datacenter", "k 2", "a=b", "Z"}, Tags: tags,
		Fields: []sources.Field{{Name: "usage_user", Kind: sources.Int}}}
	tb := sources.NewTable(s)
	for d := uint32(0); d < 2; d++ {
		tb.Device = append(tb.Device, d)
		tb.Time = append(tb.Time, 1000)
		tb.Ints[0] = append(tb.Ints[0], int64(d))
	}
	for _, tc := range []struct {
		sort bool
		want []string
	}{
		{true, []string{
			`cpu,Z=z,a\=b=v\,1,datacenter=eu-west-1a,hostname=host_0,k\ 2=x\ y,region=eu-west-1 usage_user=0i 1000`,
			`cpu,Z=z,a\=b=v,hostname=host_1,k\ 2=x,region=us-east-1 usage_user=1i 1000`,
		}},
		{false, []string{
			`cpu,hostname=host_0,region=eu-west-1,datacenter=eu-west-1a,k\ 2=x\ y,a\=b=v\,1,Z=z usage_user=0i 1000`,
			`cpu,hostname=host_1,region=us-east-1,k\ 2=x,a\=b=v,Z=z usage_user=1i 1000`,
		}},
	} {
		e := Encoder{SortTags: tc.sort}
		want := strings.Join(tc.want, "\n") + "\n"
		for pass := 0; pass < 2; pass++ { // the second from the tag-set cache
			if got := string(e.AppendTable(nil, tb)); got != want {
				t.Errorf("SortTags=%v, pass %d:\n%s\nwant\n%s", tc.sort, pass, got, want)
			}
		}
	}
}
