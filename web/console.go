package web

import (
	"bytes"
	"embed"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/soakd/soakd/history"
)

//go:embed assets
var assets embed.FS

// ConsoleOptions configure the console.
type ConsoleOptions struct {
	History *history.History // what the console draws; the same one passed to daemon.Run
	Version string
	// Control shows the control form (set rate, pause, resume). Set it
	// when SOAKD_CONTROL_TOKEN is set; the page never holds the token: the
	// user types it and the browser sends it to /control.
	Control bool
	// Panels, when set, is called on every refresh for extra sections
	// (see Panel); nil or empty shows none.
	Panels func() []Panel
}

// SecurityPolicy is the console's Content-Security-Policy: its own
// scripts, styles, images and requests only, no inline script or style,
// no framing, no form posting (the control form is sent by script, with
// the token in a header, never in a URL).
const SecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// NewConsole returns the web console's handler, for serve.Options.UI:
//
//	GET /                  the page, with the view rendered in it (it shows without script)
//	GET /console/view      the view alone (HTML), ?range=recent|whole, which the page fetches every 2 s
//	GET /console/app.js    and app.css, icon.svg: the page's assets, embedded in the binary
//	GET /history           the history the console draws, as JSON (history.History.ServeHTTP)
//
// Every response but /history's carries SecurityPolicy,
// X-Content-Type-Options: nosniff, X-Frame-Options: DENY and
// Referrer-Policy: no-referrer. Other paths are 404.
func NewConsole(o ConsoleOptions) http.Handler {
	c := &console{o: o, run: strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid())}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.page)
	mux.HandleFunc("GET /console/view", c.view)
	mux.Handle("GET /console/", http.StripPrefix("/console/", c.asset()))
	if o.History == nil {
		return secure(mux)
	}
	out := http.NewServeMux()
	out.Handle("GET /history", o.History)
	out.HandleFunc("/history", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "/history takes GET", http.StatusMethodNotAllowed)
	})
	out.Handle("/", secure(mux))
	return out
}

type console struct {
	o ConsoleOptions
	// run tells this console from another served later at the same
	// address (a soakd restarted): the page and every view carry it,
	// and a page open across the restart reloads to show the new run's
	// workloads and control form.
	run string
}

// RunHeader, on every view, names the console that rendered it.
const RunHeader = "X-Soakd-Run"

func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", SecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func (c *console) panels() []Panel {
	if c.o.Panels == nil {
		return nil
	}
	return c.o.Panels()
}

func (c *console) page(w http.ResponseWriter, _ *http.Request) {
	doc := c.o.History.Snapshot()
	var names []string
	for _, wl := range doc.Workloads {
		names = append(names, wl.Name)
	}
	data := struct {
		Version   string
		Run       string
		Control   bool
		Workloads []string
		View      view
	}{c.o.Version, c.run, c.o.Control, names, buildView(&doc, RangeRecent, c.panels())}
	writeHTML(w, "console", data)
}

func (c *console) view(w http.ResponseWriter, r *http.Request) {
	rng := RangeRecent
	if r.URL.Query().Get("range") == RangeWhole {
		rng = RangeWhole
	}
	doc := c.o.History.Snapshot()
	w.Header().Set(RunHeader, c.run)
	writeHTML(w, "view", buildView(&doc, rng, c.panels()))
}

func writeHTML(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := templates().ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "cannot render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

func (c *console) asset() http.Handler {
	files := map[string]string{"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		b, err := assets.ReadFile("assets/" + r.URL.Path)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	})
}
