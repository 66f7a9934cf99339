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
    out.textContent = 'sending…';
    out.className = '';
    try {
      const r = await fetch('control?' + q.toString(), {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + form.elements.token.value },
        cache: 'no-store',
      });
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
