// The run inspector's only script: loads server-rendered fragments of a Run page (its conversation
// and its steps) and follows a running Run over SSE. It never builds markup from Run data: fragments
// come escaped from the server, and what it writes itself goes in through textContent.
"use strict";
(function () {
  const run = document.getElementById("run");
  if (!run) return;
  const base = run.dataset.base, id = run.dataset.run;
  const q = (extra) => "?id=" + encodeURIComponent(id) + (extra || "");
  const failed = (where) => (error) => { where.textContent = "could not load: " + error; };
  let through = Number(run.dataset.events);

  // -- the conversation, as of the last event seen ------------------------------------------
  const conversation = document.getElementById("conversation");
  let showAll = false, loading = false, again = false;
  function loadConversation() {
    if (loading) { again = true; return; }
    loading = true;
    fetch(base + "/run/conversation" + q("&through=" + through + (showAll ? "&all=1" : "")))
      .then((r) => r.text())
      .then((html) => {
        conversation.innerHTML = html;
        conversation.setAttribute("aria-busy", "false");
        const body = conversation.querySelector(".conversation-body");
        if (body && Number(body.dataset.items) > items) {  // a live Run's new items can be stepped to
          items = Number(body.dataset.items);
          slider.max = number.max = String(items - 1);
          document.getElementById("item-count").textContent = String(items);
        }
      })
      .catch(failed(conversation))
      .finally(() => { loading = false; if (again) { again = false; loadConversation(); } });
  }
  conversation.addEventListener("click", (e) => {
    if (e.target.classList && e.target.classList.contains("show-all")) {
      e.preventDefault(); showAll = true; loadConversation();
    }
  });
  loadConversation();

  // -- stepping through the source items ---------------------------------------------------
  const slider = document.getElementById("step-slider"), number = document.getElementById("step-number");
  const step = document.getElementById("step");
  let items = Number(run.dataset.items), shown = -1, timer = null;
  function show(k) {
    k = Math.max(0, Math.min(items - 1, k));
    if (Number.isNaN(k) || items === 0) return;
    slider.value = number.value = String(k);
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (k === shown) return;
      shown = k;
      step.setAttribute("aria-busy", "true");
      fetch(base + "/run/step" + q("&k=" + k)).then((r) => r.text()).then((html) => {
        if (shown !== k) return;
        step.innerHTML = html;
        step.setAttribute("aria-busy", "false");
        return fetch(base + "/run/at" + q("&k=" + k)).then((r) => r.text()).then((conv) => {
          const at = document.getElementById("step-conversation");
          if (shown === k && at && at.dataset.k === String(k)) { at.innerHTML = conv; at.setAttribute("aria-busy", "false"); }
        });
      }).catch(failed(step));
    }, 60);
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  number.addEventListener("change", () => show(Number(number.value)));
  document.getElementById("step-prev").addEventListener("click", () => show(Number(slider.value) - 1));
  document.getElementById("step-next").addEventListener("click", () => show(Number(slider.value) + 1));
  document.addEventListener("keydown", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.type !== "range") return;
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      show(Number(slider.value) + (e.key === "ArrowRight" ? 1 : -1));
      slider.focus();
    }
  });
  const note = document.getElementById("problem-note");
  document.getElementById("step-problem").addEventListener("click", () => {
    note.textContent = "looking…";
    fetch(base + "/run/problem" + q()).then((r) => r.json()).then((found) => {
      note.textContent = found.message;
      if (found.position !== null) show(found.position);
    }).catch(failed(note));
  });

  // -- files --------------------------------------------------------------------------------
  const copy = document.getElementById("copy-command");
  if (copy) copy.addEventListener("click", () => {
    navigator.clipboard.writeText(document.getElementById("notebook-command").textContent);
  });

  // -- live ---------------------------------------------------------------------------------
  const follow = run.dataset.follow;
  if (!follow) return;
  const state = document.getElementById("live-state"), log = document.getElementById("live-events");
  let lastId = run.dataset.lastSseId, source = null, pending = null;
  function refresh() {  // at most about four conversation loads a second
    if (pending) return;
    pending = setTimeout(() => { pending = null; loadConversation(); }, 250);
  }
  function connect() {
    if (source) source.close();
    const url = follow + (lastId ? (follow.includes("?") ? "&" : "?") + "last_event_id=" + encodeURIComponent(lastId) : "");
    source = new EventSource(url);
    source.onopen = () => { state.textContent = "following after " + (lastId || "the start"); };
    source.onerror = () => { state.textContent = "reconnecting after " + (lastId || "the start") + "…"; };
    source.onmessage = (e) => {
      lastId = e.lastEventId;
      const row = log.insertRow(-1);
      row.dataset.sseId = e.lastEventId;
      row.insertCell(-1).textContent = e.lastEventId;
      let type = "?";
      try { type = JSON.parse(e.data).type; } catch (err) { /* shown as ? */ }
      row.insertCell(-1).textContent = type;
      log.scrollTop = log.scrollHeight;
      through = Math.max(through, parseInt(e.lastEventId, 10) || 0);
      document.getElementById("event-count").textContent = String(through);
      if (type === "RUN_FINISHED" || type === "RUN_ERROR") {
        source.close();
        state.textContent = "the Run has ended";
        fetch(base + "/run" + q()).then((r) => r.text()).then((html) => {  // the status it ended with
          const now = new DOMParser().parseFromString(html, "text/html").getElementById("run-status");
          if (now) document.getElementById("run-status").replaceChildren(...now.childNodes);
        }).catch(failed(state));
      }
      refresh();
    };
  }
  document.getElementById("live-reconnect").addEventListener("click", connect);
  connect();
})();
