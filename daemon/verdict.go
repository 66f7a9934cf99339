package daemon

import "slices"

// opSlot is the slot of op name s, or allOps for "".
func opSlot(s string) int {
	if s == "" {
		return allOps
	}
	return slices.Index(opNames, s)
}
