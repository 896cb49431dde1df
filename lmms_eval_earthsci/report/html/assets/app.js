// The sample browser of an lmms_eval_earthsci report, opened from disk (file://): no server, no request
// outside the report folder. Data comes as script files (browser/index.js, browser/data/t<N>.js) that
// call EARTHSCI.index(...) and EARTHSCI.task(...): file:// pages cannot fetch() local files.
// Everything from a run (prompts, responses, judge replies, field values) is untrusted text: it is put
// in the page with textContent / value only, never parsed as HTML.
"use strict";
(function () {
  const PAGE = 25;
  const VERDICT_LABEL = { right: "right", wrong: "wrong", no_answer: "no answer", judge_failed: "judge failed", no_verdict: "no verdict", scored: "scored" };
  const WRONG = new Set(["wrong", "no_answer", "judge_failed"]);
  const S = { index: null, loaded: {}, waiting: {}, state: null, root: null };

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = String(v);
      else if (k === "cls") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.appendChild(typeof kid === "string" ? document.createTextNode(kid) : kid);
    return e;
  }

  // ------------------------------------------------------------------ state <-> URL fragment
  function defaults() {
    return { task: "", verdicts: [], fields: {}, q: "", run: 0, a: 0, b: 1, pair: "", page: 0, doc: "" };
  }
  function parseHash() {
    const st = defaults();
    const h = decodeURIComponent(location.hash || "");
    if (!h.startsWith("#samples")) return null;
    const q = h.indexOf("?") >= 0 ? h.slice(h.indexOf("?") + 1) : "";
    for (const part of q.split("&")) {
      if (!part) continue;
      const i = part.indexOf("=");
      const k = i < 0 ? part : part.slice(0, i);
      const v = i < 0 ? "" : part.slice(i + 1);
      if (k === "task") st.task = v;
      else if (k === "verdict") st.verdicts = v ? v.split(",") : [];
      else if (k === "q") st.q = v;
      else if (k === "run" || k === "a" || k === "b" || k === "page") st[k] = parseInt(v, 10) || 0;
      else if (k === "pair") st.pair = v;
      else if (k === "doc") st.doc = v;
      else if (k.startsWith("f.")) st.fields[k.slice(2)] = v;
    }
    return st;
  }
  function writeHash(st) {
    const parts = [];
    const enc = encodeURIComponent;
    if (st.task) parts.push("task=" + enc(st.task));
    if (st.verdicts.length) parts.push("verdict=" + enc(st.verdicts.join(",")));
    for (const [k, v] of Object.entries(st.fields)) if (v) parts.push("f." + enc(k) + "=" + enc(v));
    if (st.q) parts.push("q=" + enc(st.q));
    if (st.run) parts.push("run=" + st.run);
    if (st.pair) parts.push("pair=" + enc(st.pair) + "&a=" + st.a + "&b=" + st.b);
    if (st.page) parts.push("page=" + st.page);
    if (st.doc) parts.push("doc=" + enc(st.doc));
    const h = "#samples?" + parts.join("&");
    if (location.hash !== h) history.replaceState(null, "", h);
  }

  // ------------------------------------------------------------------ data loading (script tags)
  function tasksOf(name) {
    const idx = S.index;
    if (idx.groups[name]) return idx.groups[name].filter((t) => idx.byName[t] !== undefined);
    return idx.byName[name] !== undefined ? [name] : [];
  }
  function load(names, done) {
    const todo = names.filter((t) => !S.loaded[t]);
    if (!todo.length) return done();
    let left = todo.length;
    for (const t of todo) {
      (S.waiting[t] = S.waiting[t] || []).push(() => { if (--left === 0) done(); });
      if (S.waiting[t].length === 1) {
        const s = document.createElement("script");
        s.src = S.index.tasks[S.index.byName[t]].file;
        s.onerror = () => { S.loaded[t] = { docs: [], error: "could not load " + s.src }; for (const f of S.waiting[t].splice(0)) f(); };
        document.head.appendChild(s);
      }
    }
  }

  // ------------------------------------------------------------------ filtering
  function docsOf(names) {
    const out = [];
    for (const t of names) for (const d of (S.loaded[t] || { docs: [] }).docs) out.push([t, d]);
    return out;
  }
  function text(d) {
    if (d._text === undefined) {
      const parts = [d.prompt];
      for (const r of d.runs) if (r) { parts.push(r.prompt || ""); for (const x of r.responses) parts.push(x); }
      d._text = parts.join("\n").toLowerCase();
    }
    return d._text;
  }
  function verdictOf(d, i) { const r = d.runs[i]; return r ? r.verdict : "missing"; }
  function matches(d, st, skip) {
    if (skip !== "verdict" && st.verdicts.length && !st.verdicts.includes(verdictOf(d, st.run))) return false;
    for (const [k, v] of Object.entries(st.fields)) if (v && d.fields[k] !== v) return false;
    if (st.q && !text(d).includes(st.q.toLowerCase())) return false;
    if (st.pair) {
      // McNemar's cells: scored right in one run, scored wrong in the other (no answer and a failed
      // judgement score wrong); a doc one run lacks, or without a verdict, is in neither
      const va = verdictOf(d, st.a), vb = verdictOf(d, st.b);
      const aR = va === "right" && WRONG.has(vb), bR = vb === "right" && WRONG.has(va);
      if (st.pair === "a_right" && !aR) return false;
      if (st.pair === "b_right" && !bR) return false;
      if (st.pair === "any" && !(aR || bR)) return false;
    }
    if (st.doc && d.id !== st.doc) return false;
    return true;
  }

  // ------------------------------------------------------------------ rendering
  function setState(patch) {
    Object.assign(S.state, patch);
    if (!("page" in patch)) S.state.page = 0;
    writeHash(S.state);
    render();
  }

  function controls(all, st) {
    const idx = S.index;
    const box = el("div", { cls: "controls" });
    const taskSel = el("select", { id: "f-task", onchange: (e) => setState({ task: e.target.value, fields: {}, doc: "" }) });
    for (const g of idx.groupOrder) taskSel.appendChild(el("option", { value: g, text: g + " (group)" }));
    for (const t of idx.tasks) taskSel.appendChild(el("option", { value: t.name, text: t.name + " (" + t.n + ")" }));
    taskSel.value = st.task;
    box.appendChild(el("label", {}, "task ", taskSel));
    if (idx.runs.length > 1) {
      const runSel = el("select", { id: "f-run", onchange: (e) => setState({ run: parseInt(e.target.value, 10) }) });
      idx.runs.forEach((r, i) => runSel.appendChild(el("option", { value: i, text: r })));
      runSel.value = String(st.run);
      box.appendChild(el("label", {}, "verdicts of ", runSel));
    }
    // verdict checkboxes, each with its count under the other filters
    const vbox = el("span", { cls: "verdicts" });
    const counts = {};
    for (const [, d] of all) if (matches(d, st, "verdict")) { const v = verdictOf(d, st.run); counts[v] = (counts[v] || 0) + 1; }
    for (const v of Object.keys(VERDICT_LABEL)) {
      const cb = el("input", { type: "checkbox", id: "f-verdict-" + v, checked: st.verdicts.includes(v) });
      cb.addEventListener("change", () => {
        const set = new Set(S.state.verdicts);
        if (cb.checked) set.add(v); else set.delete(v);
        setState({ verdicts: [...set] });
      });
      vbox.appendChild(el("label", { cls: "verdict v-" + v }, cb, " " + VERDICT_LABEL[v] + " ", el("span", { cls: "count", id: "count-" + v, text: counts[v] || 0 })));
    }
    box.appendChild(vbox);
    // breakdown fields of the docs shown
    const values = {};
    for (const [, d] of all) for (const [k, v] of Object.entries(d.fields)) (values[k] = values[k] || new Set()).add(v);
    for (const k of Object.keys(values).sort()) {
      const sel = el("select", { id: "f-field-" + k, onchange: (e) => setState({ fields: Object.assign({}, S.state.fields, { [k]: e.target.value }) }) });
      sel.appendChild(el("option", { value: "", text: "any " + k }));
      for (const v of [...values[k]].sort()) sel.appendChild(el("option", { value: v, text: v }));
      sel.value = st.fields[k] || "";
      box.appendChild(sel);
    }
    const q = el("input", { type: "search", id: "f-q", placeholder: "text in prompt or response", value: st.q });
    q.addEventListener("change", () => setState({ q: q.value }));
    q.addEventListener("keyup", (e) => { if (e.key === "Enter") setState({ q: q.value }); });
    box.appendChild(q);
    if (idx.runs.length > 1) {
      const pair = el("select", { id: "f-pair", onchange: (e) => setState({ pair: e.target.value }) });
      const A = idx.runs[st.a] || "A", B = idx.runs[st.b] || "B";
      for (const [v, label] of [["", "all docs"], ["any", "A and B disagree"], ["a_right", "A right, B wrong"], ["b_right", "B right, A wrong"]]) pair.appendChild(el("option", { value: v, text: label }));
      pair.value = st.pair;
      const ab = (key) => {
        const s = el("select", { id: "f-" + key, onchange: (e) => setState({ [key]: parseInt(e.target.value, 10) }) });
        idx.runs.forEach((r, i) => s.appendChild(el("option", { value: i, text: r })));
        s.value = String(st[key]);
        return s;
      };
      box.appendChild(el("label", {}, "A ", ab("a"), " B ", ab("b"), " ", pair));
      void A; void B;
    }
    const exp = el("span", { cls: "export" });
    exp.appendChild(el("button", { id: "export-jsonl", onclick: () => exportDocs("jsonl") }, "export JSONL"));
    exp.appendChild(el("button", { id: "export-csv", onclick: () => exportDocs("csv") }, "export CSV"));
    box.appendChild(exp);
    return box;
  }

  function images(d) {
    const box = el("div", { cls: "images" });
    if (typeof d.images === "string") box.appendChild(el("div", { cls: "placeholder", text: "figures not available: " + d.images }));
    else if (Array.isArray(d.images)) {
      d.images.forEach((src, i) => {
        const label = d.image_labels && d.image_labels[i] ? d.image_labels[i] : String(i + 1);
        const img = el("img", { src: "browser/img/" + src, alt: "figure " + label + " of doc " + d.id, loading: "lazy" });
        img.addEventListener("error", () => img.replaceWith(el("div", { cls: "placeholder", text: "figure " + label + " is missing" })));
        const picks = d.runs.map((r, k) => (r && r.answer === label ? S.index.runs[k] : null)).filter((x) => x);
        const cap = el("figcaption", { text: label + (d.image_labels && label === d.gold ? " (gold)" : "") + (picks.length ? " ← " + picks.join(", ") : "") });
        box.appendChild(el("figure", { cls: d.image_labels && label === d.gold ? "gold" : null }, img, cap));
      });
    }
    return box;
  }

  // a benchmark's table across docs or options: rows of {doc?, label, gold, values: [per run]}
  function crossTable(view, withDoc) {
    const idx = S.index;
    const t = el("table", { cls: "cross" });
    const head = el("tr", {}, el("th", { text: withDoc ? "variant (doc)" : "option" }), el("th", { text: "gold" }));
    idx.runs.forEach((r) => head.appendChild(el("th", { text: r })));
    t.appendChild(head);
    for (const row of view.rows) {
      const tr = el("tr", { cls: row.gold === true ? "gold" : null });
      tr.appendChild(el("td", { text: withDoc ? row.label + " (doc " + row.doc + ")" : row.label }));
      tr.appendChild(el("td", { text: row.gold === true ? "✓" : row.gold === false ? "" : String(row.gold) }));
      row.values.forEach((v) => tr.appendChild(el("td", { text: v === null || v === undefined ? "–" : String(v) })));
      t.appendChild(tr);
    }
    if (view.summary) {
      const tr = el("tr", {}, el("td", { text: "flip" }), el("td", { text: "" }));
      view.summary.forEach((v) => tr.appendChild(el("td", { text: v === null ? "–" : v })));
      t.appendChild(tr);
    }
    return el("div", { cls: "crossview" }, el("p", { cls: "crosstitle", text: view.title }), t);
  }

  function kv(obj) {
    const t = el("table", { cls: "kv" });
    for (const [k, v] of Object.entries(obj || {})) {
      t.appendChild(el("tr", {}, el("th", { text: k }), el("td", {}, el("pre", { text: typeof v === "string" ? v : JSON.stringify(v, null, 1) }))));
    }
    return t;
  }

  function runView(r, name, samePrompt) {
    const col = el("div", { cls: "run" });
    col.appendChild(el("h4", { text: name }));
    if (!r) { col.appendChild(el("p", { cls: "missing", text: "not in this run" })); return col; }
    col.appendChild(el("p", {}, el("span", { cls: "verdict v-" + r.verdict, text: VERDICT_LABEL[r.verdict] || r.verdict }), r.score === null || r.score === undefined ? "" : " score " + r.score));
    const ans = el("p", { cls: "answer" }, "extracted: ", el("code", { text: r.answer === null ? "(none)" : r.answer }));
    if (r.stage) ans.appendChild(el("span", { cls: "stage", text: " by " + r.stage }));
    col.appendChild(ans);
    r.responses.forEach((x, i) => col.appendChild(el("details", { open: i === 0 }, el("summary", { text: r.responses.length > 1 ? "response " + (i + 1) + " of " + r.responses.length : "response" }), el("pre", { cls: "response", text: x }))));
    if (r.filtered !== null && r.filtered !== undefined && !(r.responses.length === 1 && r.responses[0].trim() === r.filtered.trim())) col.appendChild(el("details", {}, el("summary", { text: "filtered response" }), el("pre", { text: r.filtered })));
    if (!samePrompt && r.prompt) col.appendChild(el("details", {}, el("summary", { text: "prompt as sent in this run" }), el("pre", { text: r.prompt })));
    if (r.judge) col.appendChild(el("details", { open: r.verdict === "judge_failed" }, el("summary", { text: "judge: " + (r.judge.status || "") + (r.judge.cause ? " (" + r.judge.cause + ")" : "") }), kv(r.judge)));
    if (r.record && Object.keys(r.record).length) col.appendChild(el("details", {}, el("summary", { text: "record (" + r.metric + ")" }), kv(r.record)));
    return col;
  }

  function docView(t, d) {
    const idx = S.index;
    const card = el("article", { cls: "doc", id: "doc-" + t + "-" + d.id, "data-task": t, "data-doc": d.id });
    const head = el("header", {}, el("strong", { text: t + " · doc " + d.id }));
    for (const [k, v] of Object.entries(d.fields)) head.appendChild(el("span", { cls: "field", text: k + ": " + v }));
    const link = el("a", { href: "#samples?task=" + encodeURIComponent(t) + "&doc=" + encodeURIComponent(d.id), text: "link" });
    head.appendChild(link);
    card.appendChild(head);
    if (d.prompts_differ) card.appendChild(el("p", { cls: "warning", text: "The runs' prompts for this doc differ (another dataset revision or task version?): each run's prompt is shown under it." }));
    card.appendChild(images(d));
    card.appendChild(el("details", {}, el("summary", { text: "prompt" }), el("pre", { cls: "prompt", text: d.prompt })));
    card.appendChild(el("p", {}, "gold: ", el("code", { text: d.gold })));
    if (d.options) card.appendChild(crossTable(d.options, false));
    if (d.pair) card.appendChild(crossTable(d.pair, true));
    const runs = el("div", { cls: "runs" });
    d.runs.forEach((r, i) => runs.appendChild(runView(r, idx.runs[i], !d.prompts_differ)));
    card.appendChild(runs);
    return card;
  }

  let lastFiltered = [];
  function render() {
    const st = S.state, root = S.root;
    const names = tasksOf(st.task);
    root.textContent = "";
    if (!names.length) { root.appendChild(el("p", { text: "No samples for " + st.task + " (was the run made with --log_samples?)." })); return; }
    if (names.some((t) => !S.loaded[t])) { root.appendChild(el("p", { cls: "loading", text: "loading " + st.task + " ..." })); load(names, render); return; }
    const all = docsOf(names);
    const t0 = performance.now();
    const shown = all.filter(([, d]) => matches(d, st));
    lastFiltered = shown;
    root.appendChild(controls(all, st));
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    const page = Math.min(st.page, pages - 1);
    const nav = el("div", { cls: "nav" });
    nav.appendChild(el("span", { id: "match-count", text: shown.length + " of " + all.length + " docs" }));
    nav.appendChild(el("button", { disabled: page === 0, onclick: () => setState({ page: page - 1 }) }, "previous"));
    nav.appendChild(el("span", { text: " page " + (page + 1) + " of " + pages + " " }));
    nav.appendChild(el("button", { disabled: page >= pages - 1, onclick: () => setState({ page: page + 1 }) }, "next"));
    root.appendChild(nav);
    const charts = [];
    for (const t of names) for (const c of S.index.tasks[S.index.byName[t]].charts || []) charts.push(c);
    if (charts.length) {
      const box = el("details", { cls: "taskcharts" }, el("summary", { text: "this task's charts (" + charts.length + ")" }));
      for (const c of charts) box.appendChild(el("img", { src: c, alt: c, loading: "lazy" }));
      root.appendChild(box);
    }
    const list = el("div", { cls: "docs" });
    for (const [t, d] of shown.slice(page * PAGE, (page + 1) * PAGE)) list.appendChild(docView(t, d));
    root.appendChild(list);
    root.setAttribute("data-filter-ms", String(Math.round(performance.now() - t0)));
    if (S.scrollPending) { S.scrollPending = false; document.getElementById("samples").scrollIntoView(); }
    for (const t of names) if (S.loaded[t].error) root.appendChild(el("p", { cls: "warning", text: S.loaded[t].error }));
  }

  function exportDocs(kind) {
    const idx = S.index;
    const rows = lastFiltered.map(([t, d]) => ({ task: t, doc_id: d.id, fields: d.fields, gold: d.gold, runs: d.runs.map((r, i) => (r ? { run: idx.runs[i], verdict: r.verdict, score: r.score, answer: r.answer, stage: r.stage, response: r.responses.join("\n---\n") } : null)) }));
    let body, type;
    if (kind === "jsonl") { body = rows.map((r) => JSON.stringify(r)).join("\n") + "\n"; type = "application/x-ndjson"; }
    else {
      const q = (v) => '"' + String(v === null || v === undefined ? "" : v).replace(/"/g, '""') + '"';
      const head = ["task", "doc_id", "gold"];
      idx.runs.forEach((r, i) => head.push("run" + i + "_verdict", "run" + i + "_answer", "run" + i + "_response"));
      const lines = [head.map(q).join(",")];
      for (const r of rows) {
        const cells = [r.task, r.doc_id, r.gold];
        r.runs.forEach((x) => cells.push(x ? x.verdict : "", x ? x.answer : "", x ? x.response : ""));
        lines.push(cells.map(q).join(","));
      }
      body = lines.join("\n") + "\n"; type = "text/csv";
    }
    const a = el("a", { href: URL.createObjectURL(new Blob([body], { type })), download: "samples." + kind });
    document.body.appendChild(a); a.click(); a.remove();
  }

  function start() {
    S.root = document.getElementById("browser");
    if (!S.root || !S.index) return;
    const st = parseHash() || defaults();
    if (!st.task || !tasksOf(st.task).length) st.task = S.index.tasks.length ? S.index.tasks[0].name : "";
    S.state = st;
    S.scrollPending = !!parseHash();
    render();
  }

  window.EARTHSCI = {
    index(data) {
      data.byName = {};
      data.tasks.forEach((t, i) => { data.byName[t.name] = i; });
      data.groupOrder = Object.keys(data.groups).sort();
      S.index = data;
      if (document.readyState !== "loading") start(); else document.addEventListener("DOMContentLoaded", start);
    },
    task(name, data) {
      S.loaded[name] = data;
      for (const f of (S.waiting[name] || []).splice(0)) f();
    },
  };
  window.addEventListener("hashchange", () => {
    const st = parseHash();
    if (st && S.index) { if (!st.task || !tasksOf(st.task).length) st.task = S.state.task; S.state = st; S.scrollPending = true; render(); }
  });
})();
