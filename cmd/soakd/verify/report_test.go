package verify

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// A report lists every device-table up to maxDeviceReports; past that
// (CHURN brings a device per replacement) only the damaged ones, while
// its counts and its text still cover them all.
func TestDeviceReportsBounded(t *testing.T) {
	var rep WorkloadReport
	n := maxDeviceReports + 500
	damaged := 0
	for i := range n {
		d := DeviceReport{Table: "cpu", Device: "host_" + strconv.Itoa(i), Acknowledged: 10, Stored: 10}
		if i%1000 == 7 {
			d.Stored = 9 // one row lost
			damaged++
		}
		rep.addDevice(d)
	}
	if rep.DeviceTables != int64(n) || rep.DevicesIntact != int64(n-damaged) || !rep.DevicesTrimmed {
		t.Fatalf("%d device-tables, %d intact, trimmed %v; want %d, %d, true", rep.DeviceTables, rep.DevicesIntact, rep.DevicesTrimmed, n, n-damaged)
	}
	if len(rep.Devices) != damaged {
		t.Errorf("%d devices listed, want the %d damaged", len(rep.Devices), damaged)
	}
	for _, d := range rep.Devices {
		if d.Stored == d.Acknowledged {
			t.Errorf("%s is intact, and listed past the bound", d.Device)
		}
	}
	var out bytes.Buffer
	rep.write(&out, options{Examples: 5, Ranges: 100})
	want := "devices: " + strconv.Itoa(n) + " device-tables; " + strconv.Itoa(n-damaged) + " hold each acknowledged row once"
	if !strings.Contains(out.String(), want) {
		t.Errorf("text:\n%s\nwant %q", out.String(), want)
	}

	var small WorkloadReport
	small.addDevice(DeviceReport{Device: "host_0", Acknowledged: 1, Stored: 1})
	if len(small.Devices) != 1 || small.DevicesTrimmed {
		t.Errorf("one device: %+v", small)
	}
}
