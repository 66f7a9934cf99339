package charts

import (
	"sync"
	"testing"
)

// Charts drawn at once (reports of parallel sweeps, tests in one
// process) share the fonts' faces, which are not safe for concurrent
// use: under -race this fails without the lock around them.
func TestPNGConcurrently(t *testing.T) {
	c := &Chart{ID: "c", Title: "a title", Width: 400, Y: Axis{Label: "rows/s"},
		Lines: []Line{{Name: "rate", X: []float64{0, 1, 2}, Y: []float64{1, 3, 2}}}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := c.PNG(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
