package sources

import "testing"

func TestTableSetNullReusesStorage(t *testing.T) {
	s := &Schema{Measurement: "m", Fields: []Field{{Name: "a", Kind: Int}, {Name: "b", Kind: Int}}}
	tb := NewTable(s)
	fill := func() {
		tb.Reset()
		for i := 0; i < 100; i++ {
			tb.Device = append(tb.Device, uint32(i))
			tb.Time = append(tb.Time, int64(i))
			tb.Ints[0] = append(tb.Ints[0], 1)
			tb.Ints[1] = append(tb.Ints[1], 2)
			if i%10 == 3 {
				tb.SetNull(1, i)
			}
		}
		tb.PadNulls()
	}
	fill()
	if tb.Null[0] != nil {
		t.Fatalf("field 0 has no null but Null[0] = %v", tb.Null[0])
	}
	if len(tb.Null[1]) != 100 {
		t.Fatalf("len(Null[1]) = %d, want 100", len(tb.Null[1]))
	}
	for i, n := range tb.Null[1] {
		if n != (i%10 == 3) {
			t.Fatalf("Null[1][%d] = %v", i, n)
		}
	}
	if a := testing.AllocsPerRun(10, fill); a != 0 {
		t.Fatalf("refilling a table with nulls allocates %.0f times", a)
	}
}
