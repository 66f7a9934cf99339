package sources

import "testing"

func TestAppendRowAndDiffField(t *testing.T) {
	s := &Schema{Measurement: "m", Fields: []Field{{Name: "a", Kind: Int}, {Name: "b", Kind: Float}}}
	src := NewTable(s)
	src.Device = append(src.Device, 1, 2)
	src.Time = append(src.Time, 10, 20)
	src.Ints[0] = append(src.Ints[0], 5, 6)
	src.Floats[1] = append(src.Floats[1], 0.5, 0)
	src.SetNull(1, 1)
	src.PadNulls()

	dst := NewTable(s)
	dst.AppendRow(src, 1)
	dst.AppendRow(src, 0)
	if dst.Len() != 2 || dst.Device[0] != 2 || dst.Time[1] != 10 || !dst.IsNull(1, 0) || dst.IsNull(1, 1) {
		t.Fatalf("appended rows: %+v", dst)
	}
	if f := dst.DiffField(0, src, 1); f != -1 {
		t.Errorf("a copied row differs in field %d", f)
	}
	if f := dst.DiffField(1, src, 1); f != 0 {
		t.Errorf("rows 5 and 6 of field a: differ in %d, want 0", f)
	}
	dst.Ints[0][1] = 6
	if f := dst.DiffField(1, src, 1); f != 1 {
		t.Errorf("a value against a null: differ in %d, want 1", f)
	}
}
