package sources

// AppendRow appends row i of src, a table of the same schema, to t.
func (t *Table) AppendRow(src *Table, i int) {
	j := t.Len()
	t.Device = append(t.Device, src.Device[i])
	t.Time = append(t.Time, src.Time[i])
	for f, fd := range src.Schema.Fields {
		if fd.Kind == Int {
			t.Ints[f] = append(t.Ints[f], src.Ints[f][i])
		} else {
			t.Floats[f] = append(t.Floats[f], src.Floats[f][i])
		}
		if src.Null[f] != nil && src.Null[f][i] {
			t.SetNull(f, j)
		}
	}
	t.PadNulls()
}

// IsNull reports whether field f of row i is null.
func (t *Table) IsNull(f, i int) bool { return t.Null[f] != nil && t.Null[f][i] }

// Float is field f of row i as a float64 (an Int field converted), and
// false when it is null: a sample's value in the encoders of series
// protocols that carry only floats.
func (t *Table) Float(f, i int) (float64, bool) {
	if t.IsNull(f, i) {
		return 0, false
	}
	if t.Schema.Fields[f].Kind == Int {
		return float64(t.Ints[f][i]), true
	}
	return t.Floats[f][i], true
}

// DiffField is the first field in which row i of t and row j of u (a
// table of the same schema) differ in value or nullness, or -1 when they
// hold the same.
func (t *Table) DiffField(i int, u *Table, j int) int {
	for f, fd := range t.Schema.Fields {
		na, nb := t.IsNull(f, i), u.IsNull(f, j)
		switch {
		case na != nb:
			return f
		case na:
		case fd.Kind == Int:
			if t.Ints[f][i] != u.Ints[f][j] {
				return f
			}
		default:
			if t.Floats[f][i] != u.Floats[f][j] {
				return f
			}
		}
	}
	return -1
}
