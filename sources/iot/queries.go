package iot

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/soakd/soakd/sources"
)

// QueryNames lists the query sources this package provides: TSBS's query
// types over the devops (cpu-only) and iot (trucks) data sets.
func QueryNames() []string { return []string{"devops-queries", "iot-queries"} }

// dataOf is the data set a query source reads.
func dataOf(name string) (data, useCase string, ok bool) {
	switch name {
	case "devops-queries":
		return "devops", sources.UseDevops, true
	case "iot-queries":
		return "iot", sources.UseIoT, true
	}
	return "", "", false
}

// QueryConfig holds the settings of a query workload (devops-queries,
// iot-queries). Tags are for caarlos0/env/v11 without a prefix; the
// engine adds SOAKD_<W>_.
type QueryConfig struct {
	Scale   int      `env:"SCALE" envDefault:"100" help:"devices of the data set queried, as the workload that writes it has them: queries pick hosts (devops) among them"`
	Queries QueryMix `env:"QUERIES" envDefault:"all" help:"query types to run and their weights: all (every type of the data set, equally), or TYPE[=WEIGHT],... e.g. lastpoint,double-groupby-5=3,high-cpu-all"`
	Window  Window   `env:"WINDOW" envDefault:"random" help:"random: each query's window lies at a random place in the data written so far (TSBS's choice over the whole data set); latest: windows end at the newest data (the last hour, the last 12 hours)"`
	Churn   Churn    `env:"CHURN" help:"the data set's CHURN, as the workload that writes it has it (SHARE/EVERY, e.g. 10%/10m): queries name the hosts (devops) that report in their window; none or empty = no churn"`
}

// DefaultQueryConfig returns the settings with every default applied.
func DefaultQueryConfig() QueryConfig {
	return QueryConfig{Scale: 100, Queries: QueryMix{All: true}, Window: WindowRandom}
}

// Window is where a query's window lies in the data written so far.
type Window uint8

const (
	// WindowRandom: at a random place, as TSBS places it in its data set.
	WindowRandom Window = iota
	// WindowLatest: at the end, the newest data.
	WindowLatest
)

// UnmarshalText parses random or latest.
func (w *Window) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "", "random":
		*w = WindowRandom
	case "latest":
		*w = WindowLatest
	default:
		return fmt.Errorf("%q: want random or latest", b)
	}
	return nil
}

// MarshalText returns random or latest.
func (w Window) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

func (w Window) String() string {
	if w == WindowLatest {
		return "latest"
	}
	return "random"
}

// QueryMix is the QUERIES setting: every query type of the data set, or
// a list of types with weights.
type QueryMix struct {
	All   bool
	Items []MixItem
}

// MixItem is one query type of a mix and its weight (relative share of
// the queries).
type MixItem struct {
	Type   sources.QueryType
	Weight float64
}

// maxMixWeight bounds a weight, so that sums stay finite.
const maxMixWeight = 1e6

// UnmarshalText parses all, or TYPE[=WEIGHT],... (weights default to 1).
func (m *QueryMix) UnmarshalText(b []byte) error {
	v := strings.TrimSpace(string(b))
	if v == "" || strings.EqualFold(v, "all") {
		*m = QueryMix{All: true}
		return nil
	}
	var out QueryMix
	var errs []error
	seen := map[sources.QueryType]bool{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		name, ws, hasW := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		t, ok := sources.ParseQueryType(name)
		if !ok {
			errs = append(errs, fmt.Errorf("unknown query type %q (known: %s)", name, knownQueryTypes()))
			continue
		}
		if seen[t] {
			errs = append(errs, fmt.Errorf("query type %s is listed twice", name))
			continue
		}
		seen[t] = true
		w := 1.0
		if hasW {
			f, err := strconv.ParseFloat(strings.TrimSpace(ws), 64)
			if err != nil || !(f > 0 && f <= maxMixWeight) {
				errs = append(errs, fmt.Errorf("%s: weight %q: want a number in (0, %g]", name, ws, float64(maxMixWeight)))
				continue
			}
			w = f
		}
		out.Items = append(out.Items, MixItem{Type: t, Weight: w})
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	*m = out
	return nil
}

// MarshalText returns the mix in the form UnmarshalText reads.
func (m QueryMix) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m QueryMix) String() string {
	if m.All {
		return "all"
	}
	parts := make([]string, len(m.Items))
	for i, it := range m.Items {
		parts[i] = it.Type.String()
		if it.Weight != 1 {
			parts[i] += "=" + strconv.FormatFloat(it.Weight, 'g', -1, 64)
		}
	}
	return strings.Join(parts, ",")
}

func knownQueryTypes() string {
	var names []string
	for t := range sources.NumQueryTypes {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

// Validate checks the settings of query source name without I/O; every
// problem is a *sources.SettingError naming its setting.
func (c QueryConfig) Validate(name string) error {
	_, useCase, ok := dataOf(name)
	if !ok {
		return sources.Invalid("SOURCE", "unknown query source %q (known: %s)", name, strings.Join(QueryNames(), ", "))
	}
	var errs []error
	if c.Scale < 1 || c.Scale > MaxScale {
		errs = append(errs, sources.Invalid("SCALE", "%d is out of range: want 1..%d devices", c.Scale, MaxScale))
	}
	if ch := c.Churn; ch.PerMillion < 0 || ch.PerMillion > 1_000_000 || (ch.PerMillion > 0 && (ch.Every <= 0 || ch.Every > maxSpan)) {
		errs = append(errs, sources.Invalid("CHURN", "%s: want SHARE/EVERY with a share in 0.0001%%..100%% and a positive interval up to %s, e.g. 10%%/10m", ch, maxSpan))
	}
	for _, it := range c.Queries.Items {
		info := it.Type.Info()
		if info.UseCase != useCase {
			errs = append(errs, sources.Invalid("QUERIES", "%s is a %s query; %s runs %s queries (%s)", it.Type, info.UseCase, name, useCase,
				typeNames(sources.QueryTypes(useCase))))
		}
	}
	for _, t := range c.types(useCase) {
		if n := t.Info().Devices; n > c.Scale && c.Scale >= 1 {
			errs = append(errs, sources.Invalid("QUERIES", "%s picks %d hosts but SCALE is %d: raise SCALE or leave the type out of QUERIES", t, n, c.Scale))
		}
	}
	return errors.Join(errs...)
}

func typeNames(ts []sources.QueryType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// Types are the query types query source name runs with these settings,
// in order (none for a name that is not a query source).
func (c *QueryConfig) Types(name string) []sources.QueryType {
	_, useCase, ok := dataOf(name)
	if !ok {
		return nil
	}
	return c.types(useCase)
}

// types are the query types the mix runs, in order.
func (c QueryConfig) types(useCase string) []sources.QueryType {
	if c.Queries.All {
		return sources.QueryTypes(useCase)
	}
	out := make([]sources.QueryType, len(c.Queries.Items))
	for i, it := range c.Queries.Items {
		out[i] = it.Type
	}
	return out
}

// Queries issues TSBS's queries over one of this package's data sets:
// each query of a type drawn from the mix, with TSBS's random choices
// (hosts, fleet, where its window lies). Its schemas are the data set's,
// so that a query target knows the tables (and can create them, as
// the writing workload would).
type Queries struct {
	name, useCase string
	cfg           QueryConfig
	seed          uint64
	sch           []*sources.Schema
	types         []sources.QueryType
	cum           []float64 // cumulative weights of types, the last is 1
	fleetHas      []bool    // iot: whether fleets[i] has a truck
	capacities    []string  // iot: every load_capacity value
	churn         *sources.QueryChurn
}

var (
	_ sources.Source  = (*Queries)(nil)
	_ sources.Batcher = (*Queries)(nil)
)

// NewQueries builds query source name (see QueryNames) over the data set
// that source data with seed, c.Scale devices and c.Churn writes. It
// does no I/O.
func NewQueries(name string, c QueryConfig, seed uint64) (*Queries, error) {
	if err := c.Validate(name); err != nil {
		return nil, err
	}
	data, useCase, _ := dataOf(name)
	dc := DefaultConfig()
	dc.Scale = c.Scale
	src, err := Build(data, dc, seed, sources.Shard{})
	if err != nil {
		return nil, err
	}
	q := &Queries{name: name, useCase: useCase, cfg: c, seed: seed, sch: src.Schemas(), types: c.types(useCase)}
	if ch := c.Churn; ch.PerMillion > 0 {
		q.churn = &sources.QueryChurn{Scale: uint32(c.Scale), PerMillion: uint64(ch.PerMillion), Every: int64(ch.Every)}
	}
	weights := make([]float64, len(q.types))
	for i := range weights {
		weights[i] = 1
		if !c.Queries.All {
			weights[i] = c.Queries.Items[i].Weight
		}
	}
	total := 0.0
	for _, w := range weights {
		total += w
	}
	acc := 0.0
	for _, w := range weights {
		acc += w
		q.cum = append(q.cum, acc/total)
	}
	q.cum[len(q.cum)-1] = 1
	if useCase == sources.UseIoT {
		q.fleetHas = fleetsWithTrucks(seed, c.Scale)
		for _, m := range truckModels {
			if !slices.Contains(q.capacities, m.load) {
				q.capacities = append(q.capacities, m.load)
			}
		}
	}
	return q, nil
}

// fleetsWithTrucks reports, for each fleet, whether a truck of the data
// set (seed, scale) is in it: looking at trucks in order until every
// fleet has one, so a few dozen in practice.
func fleetsWithTrucks(seed uint64, scale int) []bool {
	has := make([]bool, len(fleets))
	tags := truckTags{seed}
	found := 0
	var buf []byte
	for d := 0; d < scale && found < len(fleets); d++ {
		buf = tags.AppendTag(buf[:0], uint32(d), 1)
		if i := slices.Index(fleets, string(buf)); i >= 0 && !has[i] {
			has[i] = true
			found++
		}
	}
	return has
}

// Name is the source's name.
func (q *Queries) Name() string { return q.name }

var _ sources.QueryChurner = (*Queries)(nil)

// QueryChurn is the data set's churn schedule (CHURN), nil without.
func (q *Queries) QueryChurn() *sources.QueryChurn { return q.churn }

// Kind is sources.Queries.
func (q *Queries) Kind() sources.Kind { return sources.Queries }

// Schemas are the tables of the data set queried.
func (q *Queries) Schemas() []*sources.Schema { return q.sch }

// QueryTypes lists the query types the source issues.
func (q *Queries) QueryTypes() []sources.QueryType { return slices.Clone(q.types) }

// NewBatch returns an empty query batch.
func (q *Queries) NewBatch() *sources.Batch { return &sources.Batch{} }

// Stream returns query stream part of parts. Streams never end; each
// draws its own random sequence from the seed and its part.
func (q *Queries) Stream(part, parts int) (sources.Stream, error) {
	if parts < 1 || part < 0 || part >= parts {
		return nil, fmt.Errorf("stream %d of %d: want 0 <= part < parts", part, parts)
	}
	return &queryStream{q: q, r: rng{s: mix(q.seed ^ saltQueries*kSalt ^ uint64(part)*gamma)}}, nil
}

type queryStream struct {
	q *Queries
	r rng
}

// Fill appends max queries to b. It does not allocate once b.Queries has
// grown to max.
func (s *queryStream) Fill(b *sources.Batch, max int, _ int64) error {
	for range max {
		b.Queries = append(b.Queries, s.next())
	}
	return nil
}

// unit returns a uniform float64 in [0, 1).
func (s *queryStream) unit() float64 { return float64(s.r.next()>>11) / (1 << 53) }

func (s *queryStream) next() sources.Query {
	q := s.q
	u := s.unit()
	i, _ := slices.BinarySearch(q.cum, u)
	if u == q.cum[min(i, len(q.cum)-1)] {
		i++ // cum[i] is the exclusive upper bound of type i
	}
	t := q.types[min(i, len(q.types)-1)]
	info := t.Info()
	out := sources.Query{Type: t, Pos: s.unit(), Latest: q.cfg.Window == WindowLatest, Expect: info.MustFind}
	// TSBS's GetRandomSubsetPerm: distinct devices, in random order. With
	// CHURN they are slots: the sink names the devices holding them in
	// the query's window (sources.Query.Resolved).
	if info.Devices > 0 {
		out.Churn = q.churn
	}
	n := min(info.Devices, q.cfg.Scale, sources.MaxQueryDevices)
	for out.NDevices < uint8(n) {
		d := uint32(below(s.r.next(), uint64(q.cfg.Scale)))
		if !slices.Contains(out.Devices[:out.NDevices], d) {
			out.Devices[out.NDevices] = d
			out.NDevices++
		}
	}
	if info.Fleet {
		f := below(s.r.next(), uint64(len(fleets)))
		out.Fleet = fleets[f]
		out.Expect = out.Expect && q.fleetHas[f]
	}
	if t == sources.HighLoad {
		out.LoadCapacities = q.capacities
	}
	return out
}
