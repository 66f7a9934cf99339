package config

import "time"

// maxVerifyDelay bounds VERIFY_DELAY.
const maxVerifyDelay = time.Hour

// validateVerify checks VERIFY and VERIFY_DELAY.
func (w *Workload) validateVerify() []error {
	p := Prefix(w.Name)
	var errs []error
	if !(w.Verify >= 0 && w.Verify <= 1) {
		errs = append(errs, cfgErr(p+"VERIFY", "%v: want a fraction from 0 (off) to 1, e.g. 0.01", w.Verify))
	}
	if w.VerifyDelay < 0 || w.VerifyDelay > maxVerifyDelay {
		errs = append(errs, cfgErr(p+"VERIFY_DELAY", "%v: want 0 to %v", w.VerifyDelay, maxVerifyDelay))
	}
	return errs
}
