//go:build !linux

package generate

import "errors"

// haveWritev is false: outputs get copies in their buffers.
const haveWritev = false

func (g *gather) writev() error { return errors.New("BUG: writev without writev") }
