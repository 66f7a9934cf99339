package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sources"
)

// bucket is the SQL of col's time bucket of sec seconds. Every mode
// aligns buckets as time_bucket does (from 2000-01-03 00:00 UTC, a day
// boundary, so minutes, hours and days fall on the clock's).
func (q *querier) bucket(sec int64, col string) string {
	n := strconv.FormatInt(sec, 10)
	switch q.mode {
	case bucketTimeBucket:
		return "time_bucket('" + n + " seconds', " + col + ")"
	case bucketDateBin:
		return "date_bin('" + n + " seconds', " + col + ", TIMESTAMPTZ '2000-01-03 00:00:00+00')"
	}
	return "to_timestamp(floor(extract(epoch FROM " + col + ") / " + n + ") * " + n + ")"
}

// tsLit is a timestamptz literal of Unix nanoseconds (microsecond
// precision, as PostgreSQL keeps).
func tsLit(ns int64) string {
	return "TIMESTAMPTZ '" + time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.999999") + "+00'"
}

// devices lists qq's devices as SQL literals of p's device tag.
func devices(p *plan, qq *sources.Query) string {
	var b strings.Builder
	var buf []byte
	for i, d := range qq.Devices[:qq.NDevices] {
		if i > 0 {
			b.WriteByte(',')
		}
		buf = p.schema.Tags.AppendTag(buf[:0], d, p.schema.DeviceTag)
		b.WriteString(literal(string(buf)))
	}
	return b.String()
}

// metrics are the first n fields of p's table, quoted.
func metrics(p *plan, n int) []string {
	n = min(n, len(p.schema.Fields))
	out := make([]string, n)
	for i := range out {
		out[i] = quote(p.schema.Fields[i].Name)
	}
	return out
}

// aggs is "agg(m) AS prefix_m, ..." for each metric m.
func aggs(agg, prefix string, ms []string) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = agg + "(" + m + ") AS " + quote(prefix+"_"+strings.Trim(m, `"`))
	}
	return strings.Join(parts, ", ")
}

// render writes the SQL of qq over data range rng to b.
func (q *querier) render(b *strings.Builder, qq *sources.Query, rng sources.DataRange) error {
	info := qq.Type.Info()
	start, end := qq.Window(rng)
	if !rng.Known {
		// No data yet: an empty window at the epoch, which finds nothing.
		start, end = 0, 0
	}
	within := func(col string) string { return col + " >= " + tsLit(start) + " AND " + col + " < " + tsLit(end) }
	switch info.UseCase {
	case sources.UseDevops:
		if q.cpu == nil {
			return fmt.Errorf("query %s reads the devops table cpu, which this data set has not", qq.Type)
		}
		q.devops(b, qq, info, within, end)
	case sources.UseIoT:
		if q.readings == nil || q.diagnostics == nil {
			return fmt.Errorf("query %s reads the iot tables readings and diagnostics, which this data set has not", qq.Type)
		}
		q.iot(b, qq, within)
	default:
		return fmt.Errorf("unknown query type %d", qq.Type)
	}
	return nil
}

func (q *querier) devops(b *strings.Builder, qq *sources.Query, info sources.QueryInfo, within func(string) string, end int64) {
	p := q.cpu
	cpu, host := p.table, p.device
	hosts := host + " IN (" + devices(p, qq) + ")"
	if q.layout == TSBSLayout {
		hosts = "tags_id IN (SELECT id FROM tags WHERE " + host + " IN (" + devices(p, qq) + "))"
	}
	ms := metrics(p, info.Metrics)
	bucket := q.bucket(int64(info.Bucket/time.Second), "time")
	switch qq.Type {
	case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
		sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
		sources.CPUMaxAll1, sources.CPUMaxAll8:
		fmt.Fprintf(b, "SELECT %s AS time, %s FROM %s WHERE %s AND %s GROUP BY 1 ORDER BY 1",
			bucket, aggs("max", "max", ms), cpu, hosts, within("time"))
	case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
		if q.layout == TSBSLayout {
			fmt.Fprintf(b, "WITH cpu_avg AS (SELECT %s AS time, tags_id, %s FROM %s WHERE %s GROUP BY 1, 2) "+
				"SELECT tags.%s, cpu_avg.* FROM cpu_avg JOIN tags ON cpu_avg.tags_id = tags.id ORDER BY time, tags.%s",
				bucket, aggs("avg", "mean", ms), cpu, within("time"), host, host)
			return
		}
		fmt.Fprintf(b, "SELECT %s, %s AS time, %s FROM %s WHERE %s GROUP BY 1, 2 ORDER BY 2, 1",
			host, bucket, aggs("avg", "mean", ms), cpu, within("time"))
	case sources.GroupbyOrderbyLimit:
		fmt.Fprintf(b, "SELECT %s AS time, %s FROM %s WHERE time < %s GROUP BY 1 ORDER BY 1 DESC LIMIT 5",
			bucket, aggs("max", "max", ms), cpu, tsLit(end))
	case sources.HighCPU1, sources.HighCPUAll:
		fmt.Fprintf(b, "SELECT * FROM %s WHERE %s > 90.0 AND %s", cpu, ms[0], within("time"))
		if qq.Type == sources.HighCPU1 {
			b.WriteString(" AND " + hosts)
		}
	case sources.Lastpoint:
		if q.layout == TSBSLayout {
			fmt.Fprintf(b, "SELECT DISTINCT ON (t.%s) * FROM tags t INNER JOIN LATERAL "+
				"(SELECT * FROM %s c WHERE c.tags_id = t.id ORDER BY time DESC LIMIT 1) AS b ON true ORDER BY t.%s, b.time DESC",
				host, cpu, host)
			return
		}
		b.WriteString(lastPerDevice(p, "l.*", ""))
	}
}

// lastPerDevice is the last row of each device of p's table (soakd
// layout), walking the devices with a recursive skip scan over the
// (device, time) index: cols of the last rows, filtered by where.
func lastPerDevice(p *plan, cols, where string) string {
	t, d := p.table, p.device
	s := "WITH RECURSIVE devices AS ((SELECT " + d + " AS device FROM " + t + " ORDER BY " + d + " LIMIT 1) UNION ALL " +
		"SELECT (SELECT x." + d + " FROM " + t + " x WHERE x." + d + " > devices.device ORDER BY x." + d + " LIMIT 1) FROM devices WHERE devices.device IS NOT NULL) " +
		"SELECT " + cols + " FROM devices CROSS JOIN LATERAL (SELECT * FROM " + t + " x WHERE x." + d + " = devices.device ORDER BY x.time DESC LIMIT 1) l"
	if where != "" {
		s += " WHERE " + where
	}
	return s
}

func (q *querier) iot(b *strings.Builder, qq *sources.Query, within func(string) string) {
	r, d := q.readings.table, q.diagnostics.table
	fleet := literal(qq.Fleet)
	ten := func(col string) string { return q.bucket(600, col) }
	day := func(col string) string { return q.bucket(86400, col) }
	if q.layout == TSBSLayout {
		q.iotTSBS(b, qq, within, fleet, ten, day)
		return
	}
	switch qq.Type {
	case sources.LastLoc:
		b.WriteString(lastPerDevice(q.readings, "l.name, l.driver, l.longitude, l.latitude", "l.fleet = "+fleet))
	case sources.LowFuel:
		b.WriteString(lastPerDevice(q.diagnostics, "l.name, l.driver, l.fuel_state", "l.fleet = "+fleet+" AND l.fuel_state < 0.1"))
	case sources.HighLoad:
		b.WriteString(lastPerDevice(q.diagnostics, "l.name, l.driver, l.current_load, l.load_capacity",
			"l.fleet = "+fleet+" AND l.current_load / l.load_capacity::double precision > 0.9"))
	case sources.StationaryTrucks:
		fmt.Fprintf(b, "SELECT name, driver FROM %s WHERE %s AND name IS NOT NULL AND fleet = %s GROUP BY 1, 2 HAVING avg(velocity) < 1",
			r, within("time"), fleet)
	case sources.LongDrivingSessions:
		fmt.Fprintf(b, "SELECT name, driver FROM (SELECT %s AS ten_minutes, name, driver FROM %s WHERE %s AND name IS NOT NULL AND fleet = %s "+
			"GROUP BY 1, 2, 3 HAVING avg(velocity) > 1) r GROUP BY name, driver HAVING count(r.ten_minutes) > %d",
			ten("time"), r, within("time"), fleet, tenMinutePeriods(5, 4*time.Hour))
	case sources.AvgVsProjectedFuelConsumption:
		fmt.Fprintf(b, "SELECT fleet, avg(fuel_consumption) AS avg_fuel_consumption, avg(nominal_fuel_consumption::double precision) AS projected_fuel_consumption "+
			"FROM %s WHERE velocity > 1 AND %s AND fleet IS NOT NULL AND nominal_fuel_consumption IS NOT NULL AND name IS NOT NULL GROUP BY fleet",
			r, within("time"))
	case sources.AvgDailyDrivingDuration:
		fmt.Fprintf(b, "WITH ten_minute_driving_sessions AS (SELECT %s AS ten_minutes, name, driver, fleet FROM %s WHERE %s AND name IS NOT NULL "+
			"GROUP BY 1, 2, 3, 4 HAVING avg(velocity) > 1), "+
			"daily_total_session AS (SELECT %s AS day, name, driver, fleet, count(*) / 6 AS hours FROM ten_minute_driving_sessions GROUP BY 1, 2, 3, 4) "+
			"SELECT fleet, name, driver, avg(hours) AS avg_daily_hours FROM daily_total_session GROUP BY fleet, name, driver",
			ten("time"), r, within("time"), day("ten_minutes"))
	case sources.DailyActivity:
		fmt.Fprintf(b, "SELECT fleet, model, y.day AS time, sum(y.ten_mins_per_day) / 144 AS daily_activity FROM "+
			"(SELECT %s AS day, %s AS ten_minutes, name, fleet, model, count(*) AS ten_mins_per_day FROM %s WHERE %s AND name IS NOT NULL "+
			"GROUP BY 1, 2, 3, 4, 5 HAVING avg(status) < 1) y GROUP BY fleet, model, y.day ORDER BY y.day",
			day("time"), ten("time"), d, within("time"))
	case sources.BreakdownFrequency:
		fmt.Fprintf(b, "WITH breakdown_per_truck_per_ten_minutes AS (SELECT %s AS ten_minutes, name, model, "+
			"(count(*) FILTER (WHERE status = 0))::double precision / count(*) >= 0.5 AS broken_down FROM %s WHERE %s AND name IS NOT NULL GROUP BY 1, 2, 3), "+
			"breakdowns_per_truck AS (SELECT ten_minutes, name, model, broken_down, lead(broken_down) OVER (PARTITION BY name ORDER BY ten_minutes) AS next_broken_down "+
			"FROM breakdown_per_truck_per_ten_minutes) "+
			"SELECT model, count(*) FROM breakdowns_per_truck WHERE broken_down = false AND next_broken_down = true GROUP BY model",
			ten("time"), d, within("time"))
	}
}

// iotTSBS is TSBS's iot SQL (over the tags table), with the data's range
// where TSBS reads the whole table and breakdown-frequency's share of
// zero statuses in floating point.
func (q *querier) iotTSBS(b *strings.Builder, qq *sources.Query, within func(string) string, fleet string, ten, day func(string) string) {
	r, d := q.readings.table, q.diagnostics.table
	lastIn := func(table, cols, cond string) {
		fmt.Fprintf(b, "SELECT t.name, t.driver, x.* FROM tags t INNER JOIN LATERAL (SELECT %s FROM %s x WHERE x.tags_id = t.id ORDER BY time DESC LIMIT 1) x ON true "+
			"WHERE t.name IS NOT NULL%s AND t.fleet = %s", cols, table, cond, fleet)
	}
	switch qq.Type {
	case sources.LastLoc:
		lastIn(r, "longitude, latitude", "")
	case sources.LowFuel:
		lastIn(d, "fuel_state", " AND x.fuel_state < 0.1")
	case sources.HighLoad:
		fmt.Fprintf(b, "SELECT t.name, t.driver, x.*, t.load_capacity FROM tags t INNER JOIN LATERAL (SELECT current_load FROM %s x WHERE x.tags_id = t.id ORDER BY time DESC LIMIT 1) x ON true "+
			"WHERE t.name IS NOT NULL AND x.current_load / t.load_capacity > 0.9 AND t.fleet = %s", d, fleet)
	case sources.StationaryTrucks:
		fmt.Fprintf(b, "SELECT t.name, t.driver FROM tags t INNER JOIN %s r ON r.tags_id = t.id WHERE %s AND t.name IS NOT NULL AND t.fleet = %s "+
			"GROUP BY 1, 2 HAVING avg(r.velocity) < 1", r, within("r.time"), fleet)
	case sources.LongDrivingSessions:
		fmt.Fprintf(b, "SELECT t.name, t.driver FROM tags t INNER JOIN LATERAL (SELECT %s AS ten_minutes, tags_id FROM %s WHERE %s "+
			"GROUP BY ten_minutes, tags_id HAVING avg(velocity) > 1 ORDER BY ten_minutes, tags_id) AS r ON t.id = r.tags_id "+
			"WHERE t.name IS NOT NULL AND t.fleet = %s GROUP BY name, driver HAVING count(r.ten_minutes) > %d",
			ten("time"), r, within("time"), fleet, tenMinutePeriods(5, 4*time.Hour))
	case sources.AvgVsProjectedFuelConsumption:
		fmt.Fprintf(b, "SELECT t.fleet, avg(r.fuel_consumption) AS avg_fuel_consumption, avg(t.nominal_fuel_consumption) AS projected_fuel_consumption "+
			"FROM tags t INNER JOIN LATERAL (SELECT tags_id, fuel_consumption FROM %s r WHERE r.tags_id = t.id AND velocity > 1 AND %s) r ON true "+
			"WHERE t.fleet IS NOT NULL AND t.nominal_fuel_consumption IS NOT NULL AND t.name IS NOT NULL GROUP BY fleet",
			r, within("r.time"))
	case sources.AvgDailyDrivingDuration:
		fmt.Fprintf(b, "WITH ten_minute_driving_sessions AS (SELECT %s AS ten_minutes, tags_id FROM %s r WHERE %s GROUP BY tags_id, ten_minutes HAVING avg(velocity) > 1), "+
			"daily_total_session AS (SELECT %s AS day, tags_id, count(*) / 6 AS hours FROM ten_minute_driving_sessions GROUP BY day, tags_id) "+
			"SELECT t.fleet, t.name, t.driver, avg(d.hours) AS avg_daily_hours FROM daily_total_session d INNER JOIN tags t ON t.id = d.tags_id GROUP BY fleet, name, driver",
			ten("time"), r, within("time"), day("ten_minutes"))
	case sources.DailyActivity:
		fmt.Fprintf(b, "SELECT t.fleet, t.model, y.day, sum(y.ten_mins_per_day) / 144 AS daily_activity FROM tags t INNER JOIN "+
			"(SELECT %s AS day, %s AS ten_minutes, tags_id, count(*) AS ten_mins_per_day FROM %s WHERE %s GROUP BY day, ten_minutes, tags_id HAVING avg(status) < 1) y "+
			"ON y.tags_id = t.id WHERE t.name IS NOT NULL GROUP BY fleet, model, y.day ORDER BY y.day",
			day("time"), ten("time"), d, within("time"))
	case sources.BreakdownFrequency:
		fmt.Fprintf(b, "WITH breakdown_per_truck_per_ten_minutes AS (SELECT %s AS ten_minutes, tags_id, "+
			"(count(*) FILTER (WHERE status = 0))::double precision / count(*) >= 0.5 AS broken_down FROM %s WHERE %s GROUP BY ten_minutes, tags_id), "+
			"breakdowns_per_truck AS (SELECT ten_minutes, tags_id, broken_down, lead(broken_down) OVER (PARTITION BY tags_id ORDER BY ten_minutes) AS next_broken_down "+
			"FROM breakdown_per_truck_per_ten_minutes) "+
			"SELECT t.model, count(*) FROM tags t INNER JOIN breakdowns_per_truck b ON t.id = b.tags_id "+
			"WHERE t.name IS NOT NULL AND broken_down = false AND next_broken_down = true GROUP BY model",
			ten("time"), d, within("time"))
	}
}

// tenMinutePeriods is TSBS's: the 10-minute periods in duration less
// minutesPerHour of rest per hour (4 hours, 5 minutes: 22).
func tenMinutePeriods(minutesPerHour float64, duration time.Duration) int {
	return int((duration.Minutes() - minutesPerHour*duration.Hours()) / 10)
}
