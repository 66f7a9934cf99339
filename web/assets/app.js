// soakd console: refreshes the view every 2 s from console/view (HTML
// rendered by soakd, charts included) and, when run-time control is on,
// sends the control form to /control with the token the user typed. The
// token lives only in the form's field: it is never stored or put in a URL.
'use strict';
(function () {
  const view = document.getElementById('view');
  const conn = document.getElementById('conn');
  let range = 'recent';
  let busy = false;

  // refresh fetches the view. An answer that is an error (soakd's own, or
  // a proxy's before it) is told apart from no answer at all: the first
  // says what answered, the second that soakd may have stopped.
  async function refresh() {
    if (busy) return;
    busy = true;
    try {
      let r;
      try {
        r = await fetch('console/view?range=' + encodeURIComponent(range), { cache: 'no-store' });
      } catch (e) {
        conn.textContent = 'soakd is not answering (stopped?)';
        conn.className = 'bad';
        return;
      }
      const text = await r.text();
      const run = r.headers.get('X-Soakd-Run');
      if (r.ok && run && run !== document.body.dataset.run) {
        // Another soakd answers at this address (it was restarted): its
        // workloads and control differ from this page's form.
        conn.textContent = 'a new soakd run answers here: reloading';
        location.reload();
        return;
      }
      if (!r.ok) {
        const why = text.trim().slice(0, 200);
        conn.textContent = 'the view could not be refreshed: HTTP ' + r.status + (why ? ': ' + why : '');
        conn.className = 'bad';
        return;
      }
      view.innerHTML = text;
      conn.textContent = 'updated ' + new Date().toLocaleTimeString();
      conn.className = '';
    } catch (e) {
      conn.textContent = 'the view could not be refreshed: ' + e.message;
      conn.className = 'bad';
    } finally {
      busy = false;
    }
  }

  for (const b of document.querySelectorAll('.range button')) {
    b.addEventListener('click', () => {
      range = b.dataset.range;
      for (const o of document.querySelectorAll('.range button')) {
        o.setAttribute('aria-pressed', String(o === b));
      }
      refresh();
    });
  }
  setInterval(refresh, 2000);

  const form = document.getElementById('control');
  if (!form) return;
  const out = document.getElementById('control-result');

  // headerText is s as a header value carries it: its UTF-8 bytes, one
  // character each, as curl sends a token. Given as typed, a token with a
  // letter outside ASCII was sent in Latin-1 (ö: refused as a wrong
  // token) or not at all (€: "soakd is not answering").
  function headerText(s) {
    return Array.from(new TextEncoder().encode(s), (b) => String.fromCharCode(b)).join('');
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const action = ev.submitter ? ev.submitter.value : 'rate';
    const q = new URLSearchParams({ workload: form.elements.workload.value });
    if (action === 'rate') {
      const rate = form.elements.rate.value.trim();
      if (!rate) { out.textContent = 'give a rate'; out.className = 'bad'; return; }
      q.set('rate', rate);
    } else {
      q.set('action', action);
    }
    let headers;
    try {
      // soakd drops the white space around the token it is given.
      headers = new Headers({ Authorization: 'Bearer ' + headerText(form.elements.token.value.trim()) });
    } catch (e) {
      out.textContent = 'the token cannot be sent in an HTTP header (it holds a control character)';
      out.className = 'bad';
      return;
    }
    out.textContent = 'sending…';
    out.className = '';
    try {
      const r = await fetch('control?' + q.toString(), { method: 'POST', headers, cache: 'no-store' });
      const text = (await r.text()).trim();
      if (r.ok) {
        out.textContent = action === 'rate' ? 'rate set to ' + q.get('rate') : action + 'd';
        out.className = 'ok';
        refresh();
      } else if (r.status === 401) {
        out.textContent = 'refused: wrong token (401)';
        out.className = 'bad';
      } else {
        out.textContent = 'refused (' + r.status + '): ' + text;
        out.className = 'bad';
      }
    } catch (e) {
      out.textContent = 'soakd is not answering';
      out.className = 'bad';
    }
  });
})();
