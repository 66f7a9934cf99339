package settings

import (
	"cmp"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable lists settings as soakd config and --help do: a row each of
// variable, flag, default (- when none), the value environ sets (as
// Shown; without values, no such column) and help.
func WriteTable(w io.Writer, settings []Setting, values map[string]string) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	if values == nil {
		fmt.Fprintln(tw, "VARIABLE\tFLAG\tDEFAULT\tHELP")
	} else {
		fmt.Fprintln(tw, "VARIABLE\tFLAG\tDEFAULT\tVALUE\tHELP")
	}
	for _, s := range settings {
		def := cmp.Or(s.Default, "-")
		if values == nil {
			fmt.Fprintf(tw, "%s\t--%s\t%s\t%s\n", s.Key, s.Flag, def, s.Help)
			continue
		}
		v := ""
		if raw, set := values[s.Key]; set {
			v = s.Shown(raw)
		}
		fmt.Fprintf(tw, "%s\t--%s\t%s\t%s\t%s\n", s.Key, s.Flag, def, v, s.Help)
	}
	_ = tw.Flush()
}
