package influx

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sources"
)

// The InfluxQL of TSBS's query types. It answers what the SQL of
// sinks/postgres answers (the semantics of TSBS's TimescaleDB queries),
// which TSBS's own InfluxQL does not always do: its last-loc takes the
// first point (ORDER BY time, ascending), its low-fuel filters before
// taking the last point, its groupby-orderby-limit has no lower bound and
// returns the oldest minutes, its stationary-trucks averages only the
// first 10 minutes of two, its avg-daily-driving-duration counts 10-minute
// periods without the "driving" condition, and it divides tags
// (load_capacity, nominal_fuel_consumption), which InfluxQL cannot. Here:
//
//   - buckets are GROUP BY time(...) fill(none), so only buckets with
//     data come back, as in SQL; times are integer nanoseconds;
//   - the last point of each truck is a subquery ORDER BY time DESC
//     LIMIT 1 per series, filtered outside;
//   - high-load compares the load with 0.9 x each capacity the trucks
//     have (Query.LoadCapacities), capacities being tags;
//   - avg-vs-projected-fuel-consumption asks for the mean and count of
//     fuel_consumption per fleet and nominal_fuel_consumption, and the
//     sink combines them into one row per fleet;
//   - groupby-orderby-limit's lower bound is its window's start, an hour
//     before the end: InfluxQL needs one for GROUP BY time, and the five
//     newest minutes before the end lie in it;
//   - breakdown-frequency's broken-down indicator is floor(2 x share of
//     zero statuses) / itself (InfluxQL's division by zero gives 0), and
//     its transitions difference() = 1 over the buckets of each truck.

// timeRange is "time >= start AND time < end" in nanoseconds.
func timeRange(start, end int64) string {
	return "time >= " + strconv.FormatInt(start, 10) + " AND time < " + strconv.FormatInt(end, 10)
}

// devicesOr is ("hostname" = 'host_1' OR ...) for qq's devices.
func devicesOr(sc *sources.Schema, qq *sources.Query) string {
	var b strings.Builder
	b.WriteByte('(')
	key := ident(sc.TagKeys[sc.DeviceTag])
	var buf []byte
	for i, d := range qq.Devices[:qq.NDevices] {
		if i > 0 {
			b.WriteString(" OR ")
		}
		buf = sc.Tags.AppendTag(buf[:0], d, sc.DeviceTag)
		b.WriteString(key + " = " + str(string(buf)))
	}
	b.WriteByte(')')
	return b.String()
}

// aggs is "agg("m") AS "prefix_m", ..." for the first n fields of sc.
func aggs(sc *sources.Schema, agg, prefix string, n int) string {
	n = min(n, len(sc.Fields))
	parts := make([]string, n)
	for i := range parts {
		f := sc.Fields[i].Name
		parts[i] = agg + "(" + ident(f) + ") AS " + ident(prefix+"_"+f)
	}
	return strings.Join(parts, ", ")
}

func every(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// render writes the InfluxQL of qq over data range rng to b.
func (q *querier) render(b *strings.Builder, qq *sources.Query, rng sources.DataRange) error {
	info := qq.Type.Info()
	start, end := qq.Window(rng)
	within := timeRange(start, end)
	switch info.UseCase {
	case sources.UseDevops:
		if q.cpu == nil {
			return fmt.Errorf("query %s reads the devops measurement cpu, which this data set has not", qq.Type)
		}
		cpu := q.cpu
		from, host := ident(cpu.Measurement), ident(cpu.TagKeys[cpu.DeviceTag])
		switch qq.Type {
		case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
			sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
			sources.CPUMaxAll1, sources.CPUMaxAll8:
			fmt.Fprintf(b, "SELECT %s FROM %s WHERE %s AND %s GROUP BY time(%s) fill(none)",
				aggs(cpu, "max", "max", info.Metrics), from, devicesOr(cpu, qq), within, every(info.Bucket))
		case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
			fmt.Fprintf(b, "SELECT %s FROM %s WHERE %s GROUP BY time(%s), %s fill(none)",
				aggs(cpu, "mean", "mean", info.Metrics), from, within, every(info.Bucket), host)
		case sources.GroupbyOrderbyLimit:
			fmt.Fprintf(b, "SELECT %s FROM %s WHERE %s GROUP BY time(%s) fill(none) ORDER BY time DESC LIMIT 5",
				aggs(cpu, "max", "max", 1), from, within, every(info.Bucket))
		case sources.HighCPU1, sources.HighCPUAll:
			fmt.Fprintf(b, "SELECT * FROM %s WHERE %s > 90 AND %s", from, ident(cpu.Fields[0].Name), within)
			if qq.Type == sources.HighCPU1 {
				b.WriteString(" AND " + devicesOr(cpu, qq))
			}
		case sources.Lastpoint:
			fmt.Fprintf(b, "SELECT * FROM %s GROUP BY %s ORDER BY time DESC LIMIT 1", from, host)
		}
	case sources.UseIoT:
		if q.readings == nil || q.diagnostics == nil {
			return fmt.Errorf("query %s reads the iot measurements readings and diagnostics, which this data set has not", qq.Type)
		}
		q.iot(b, qq, within)
	default:
		return fmt.Errorf("unknown query type %d", qq.Type)
	}
	return nil
}

func (q *querier) iot(b *strings.Builder, qq *sources.Query, within string) {
	r, d := ident(q.readings.Measurement), ident(q.diagnostics.Measurement)
	fleet := `"fleet" = ` + str(qq.Fleet)
	switch qq.Type {
	case sources.LastLoc:
		fmt.Fprintf(b, `SELECT "longitude", "latitude" FROM %s WHERE %s GROUP BY "name", "driver" ORDER BY time DESC LIMIT 1`, r, fleet)
	case sources.LowFuel:
		fmt.Fprintf(b, `SELECT "fuel_state" FROM (SELECT "fuel_state" FROM %s WHERE %s GROUP BY "name", "driver" ORDER BY time DESC LIMIT 1) `+
			`WHERE "fuel_state" < 0.1 GROUP BY "name", "driver" ORDER BY time DESC`, d, fleet)
	case sources.HighLoad:
		var conds []string
		for _, c := range qq.LoadCapacities {
			f, err := strconv.ParseFloat(c, 64)
			if err != nil || f <= 0 {
				continue
			}
			conds = append(conds, `("load_capacity" = `+str(c)+` AND "current_load" > `+num(0.9*f)+`)`)
		}
		if len(conds) == 0 {
			conds = []string{"false"}
		}
		fmt.Fprintf(b, `SELECT "current_load" FROM (SELECT "current_load" FROM %s WHERE %s GROUP BY "name", "driver", "load_capacity" ORDER BY time DESC LIMIT 1) `+
			`WHERE %s GROUP BY "name", "driver", "load_capacity" ORDER BY time DESC`, d, fleet, strings.Join(conds, " OR "))
	case sources.StationaryTrucks:
		fmt.Fprintf(b, `SELECT "mean_velocity" FROM (SELECT mean("velocity") AS "mean_velocity" FROM %s WHERE %s AND %s GROUP BY "name", "driver") `+
			`WHERE "mean_velocity" < 1 GROUP BY "name", "driver"`, r, fleet, within)
	case sources.LongDrivingSessions:
		fmt.Fprintf(b, `SELECT "ten_min" FROM (SELECT count("mv") AS "ten_min" FROM (SELECT mean("velocity") AS "mv" FROM %s WHERE %s AND %s `+
			`GROUP BY time(10m), "name", "driver" fill(none)) WHERE "mv" > 1 GROUP BY "name", "driver") WHERE "ten_min" > %d GROUP BY "name", "driver"`,
			r, fleet, within, tenMinutePeriods(5, 4*time.Hour))
	case sources.AvgVsProjectedFuelConsumption:
		fmt.Fprintf(b, `SELECT mean("fuel_consumption") AS "avg_fuel_consumption", count("fuel_consumption") AS "n", count("velocity") AS "rows" FROM %s `+
			`WHERE "velocity" > 1 AND %s GROUP BY "fleet", "nominal_fuel_consumption"`, r, within)
	case sources.AvgDailyDrivingDuration:
		fmt.Fprintf(b, `SELECT mean("hours") AS "avg_daily_hours" FROM (SELECT floor(count("mv") / 6) AS "hours" FROM `+
			`(SELECT mean("velocity") AS "mv" FROM %s WHERE %s GROUP BY time(10m), "fleet", "name", "driver" fill(none)) `+
			`WHERE "mv" > 1 AND %s GROUP BY time(1d), "fleet", "name", "driver" fill(none)) GROUP BY "fleet", "name", "driver"`,
			r, within, within)
	case sources.DailyActivity:
		fmt.Fprintf(b, `SELECT sum("n") / 144 AS "daily_activity" FROM (SELECT count("status") AS "n", mean("status") AS "ms" FROM %s `+
			`WHERE %s GROUP BY time(10m), "name", "fleet", "model" fill(none)) WHERE "ms" < 1 AND %s GROUP BY time(1d), "fleet", "model" fill(none)`,
			d, within, within)
	case sources.BreakdownFrequency:
		fmt.Fprintf(b, `SELECT count("d") AS "count" FROM (SELECT difference("b") AS "d" FROM (SELECT floor(2 * mean("z")) / floor(2 * mean("z")) AS "b" FROM `+
			`(SELECT 1 - "status" / "status" AS "z" FROM %s WHERE %s) WHERE %s GROUP BY time(10m), "name", "model" fill(none)) GROUP BY "name", "model") `+
			`WHERE "d" = 1 GROUP BY "model"`, d, within, within)
	}
}

// tenMinutePeriods is TSBS's: the 10-minute periods in duration less
// minutesPerHour of rest per hour (4 hours, 5 minutes: 22).
func tenMinutePeriods(minutesPerHour float64, duration time.Duration) int {
	return int((duration.Minutes() - minutesPerHour*duration.Hours()) / 10)
}
