package iot

import "github.com/soakd/soakd/sources"

// Tag values are computed from (seed, device) by the sources' Taggers,
// which costs no memory at any scale. For modest data sets they are
// computed once into one string (precomputedMax device-tables at most,
// a few MB), so sinks that need Go strings (e.g. a COPY row of []any) can
// take them without allocating through TagString.
const precomputedMax = 50_000

// StringTagger is implemented by the Taggers of modest data sets: the tag
// value as a string that shares the tagger's memory (no allocation).
type StringTagger interface {
	sources.Tagger
	TagString(device uint32, tag int) string
}

// stringTags holds every device's tag values in one string.
type stringTags struct {
	computed sources.Tagger // devices past the precomputed ones (CHURN's replacements)
	ntags    int
	off      []uint32 // value i is all[off[i]:off[i+1]], i = device*ntags+tag
	all      string
}

func precompute(t sources.Tagger, devices, ntags int) *stringTags {
	s := &stringTags{computed: t, ntags: ntags, off: make([]uint32, 0, devices*ntags+1)}
	var buf []byte
	for d := range devices {
		for k := range ntags {
			s.off = append(s.off, uint32(len(buf)))
			buf = t.AppendTag(buf, uint32(d), k)
		}
	}
	s.off = append(s.off, uint32(len(buf)))
	s.all = string(buf)
	return s
}

// TagString returns the value without allocating for the precomputed
// devices (0..SCALE-1); the devices CHURN brings in are computed (and
// allocate).
func (s *stringTags) TagString(d uint32, tag int) string {
	i := int(d)*s.ntags + tag
	if i+1 >= len(s.off) {
		return string(s.computed.AppendTag(nil, d, tag))
	}
	return s.all[s.off[i]:s.off[i+1]]
}

func (s *stringTags) AppendTag(dst []byte, d uint32, tag int) []byte {
	i := int(d)*s.ntags + tag
	if i+1 >= len(s.off) {
		return s.computed.AppendTag(dst, d, tag)
	}
	return append(dst, s.all[s.off[i]:s.off[i+1]]...)
}

// precomputeTags swaps the computed Taggers of schemas for precomputed
// ones when scale devices of every table fit in precomputedMax.
func precomputeTags(schemas []*sources.Schema, scale int) {
	if scale*len(schemas) > precomputedMax {
		return
	}
	for _, s := range schemas {
		s.Tags = precompute(s.Tags, scale, len(s.TagKeys))
	}
}
