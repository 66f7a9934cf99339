package iot

import (
	"strconv"

	"github.com/soakd/soakd/sources"
)

// The iot source models TSBS's trucks (pkg/data/usecases/iot).

type truckModel struct {
	name                   string
	load, fuel, nominalUse string
}

var (
	truckModels   = []truckModel{{"F-150", "2000", "200", "15"}, {"G-2000", "5000", "300", "19"}, {"H-2", "1500", "150", "12"}}
	drivers       = []string{"Derek", "Rodney", "Albert", "Andy", "Seth", "Trish"}
	fleets        = []string{"East", "West", "North", "South"}
	deviceVersion = []string{"v1.0", "v1.5", "v2.0", "v2.3"}
	truckKeys     = []string{"name", "fleet", "driver", "model", "device_version", "load_capacity", "fuel_capacity", "nominal_fuel_consumption"}
)

// truckTags computes a truck's tags from (seed, device). Like TSBS, about
// 1 % of trucks lack one tag value (never the name): the tag is empty,
// which line protocol omits and CSV/COPY write as empty/NULL.
type truckTags struct{ seed uint64 }

func (tt truckTags) AppendTag(dst []byte, d uint32, tag int) []byte {
	x := mix(devKey(tt.seed, d) ^ saltTags*kSalt)
	if tag > 0 && below(x, 100) == 0 && int(below32(x, uint64(len(truckKeys)-1)))+1 == tag {
		return dst
	}
	y := mix(x + uint64(tag)*gamma)
	m := &truckModels[below(mix(x^0x5bd1e995), uint64(len(truckModels)))]
	switch tag {
	case 0:
		dst = append(dst, "truck_"...)
		return strconv.AppendUint(dst, uint64(d), 10)
	case 1:
		return append(dst, fleets[below(y, uint64(len(fleets)))]...)
	case 2:
		return append(dst, drivers[below(y, uint64(len(drivers)))]...)
	case 3:
		return append(dst, m.name...)
	case 4:
		return append(dst, deviceVersion[below(y, uint64(len(deviceVersion)))]...)
	case 5:
		return append(dst, m.load...)
	case 6:
		return append(dst, m.fuel...)
	case 7:
		return append(dst, m.nominalUse...)
	}
	return dst
}

// walkF is a Float walk field with dec decimals whose state is in units
// of 10^-dec.
func walkF(name string, dec int, lo, hi, step, init int64) field {
	return field{name: name, kind: sources.Float, dec: dec, gen: walk, lo: lo, hi: hi, stepLo: -step, stepHi: step, init: init}
}

func newTrucks(seed uint64) *multi {
	tags := truckTags{seed}
	readings := newGeneric("readings", truckKeys, tags, []field{
		walkF("latitude", 5, -90e5, 90e5, 500, -1),    // steps of up to 0.005 degrees
		walkF("longitude", 5, -180e5, 180e5, 500, -1), // (TSBS: UD(-0.005, 0.005))
		walkF("elevation", 0, 0, 5000, 10, -1),
		walkF("velocity", 0, 0, 100, 10, 0),
		walkF("heading", 0, 0, 360, 5, -1),
		walkF("grade", 0, 0, 100, 5, 0),
		walkF("fuel_consumption", 1, 0, 500, 50, 250),
	})
	// TSBS starts latitude in [0, 90), longitude in [0, 180), elevation
	// in [0, 500): narrow the random starts to match.
	readings.fields[0].initLo, readings.fields[1].initLo, readings.fields[2].initLo = 0, 0, 0
	readings.fields[0].initHi, readings.fields[1].initHi, readings.fields[2].initHi = 90e5, 180e5, 500
	diagnostics := newGeneric("diagnostics", truckKeys, tags, []field{
		// fuel drains by up to 0.001 of the tank per reading and refills
		// when empty; state in 1/10000 of a tank, printed with 1 decimal.
		{name: "fuel_state", kind: sources.Float, dec: 1, gen: walk, lo: 0, hi: 10000, stepLo: -10, stepHi: 0, init: 10000, div: 1000, refill: true},
		// the load changes with 5 % chance per reading (TSBS LD)
		{name: "current_load", kind: sources.Float, dec: 0, gen: jump, lo: 0, hi: 5000, init: 0, jumpP: 1 << 32 / 20},
		// status walks in [0, 5] in hundredths, printed as an integer
		{name: "status", kind: sources.Int, gen: walk, lo: 0, hi: 500, stepLo: -173, stepHi: 173, init: 0, div: 100},
	})
	// The capacities are numbers (TSBS's float32 tags), which queries
	// divide by.
	numeric := []bool{false, false, false, false, false, true, true, true}
	readings.sch.NumericTags, diagnostics.sch.NumericTags = numeric, numeric
	return newMulti(readings, diagnostics)
}
