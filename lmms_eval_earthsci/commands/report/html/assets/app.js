// The sample browser of an lmms_eval_earthsci report, opened from disk (file://): no server, no request
// outside the report folder. Data comes as script files that call EARTHSCI.index(...) (browser/index.js),
// EARTHSCI.task(...) (browser/data/t<N>.js: a task's docs, each run's verdict and scored answer) and
// EARTHSCI.details(...) (browser/data/t<N>_r<K>.js: run K's responses and records, loaded for the runs
// shown in full): file:// pages cannot fetch() local files.
// Everything from a run (prompts, responses, judge replies, field values) is untrusted text: it is put
// in the page with textContent / value only, never parsed as HTML.
"use strict";
(function () {
  const PAGE = 25;
  const VERDICT_LABEL = { right: "right", wrong: "wrong", no_answer: "no answer", judge_failed: "judge failed", no_verdict: "no verdict", scored: "scored" };
  // McNemar's "wrong" side, as the paired comparisons count it: the one-click "not right" filter
  const NOT_RIGHT = new Set(["wrong", "no_answer", "judge_failed"]);
  const S = { index: null, loaded: {}, details: {}, waiting: {}, state: null, root: null, extraRuns: new Set() };

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
  // "#samples?k=v&k=v": each key and value percent-encoded on its own (as commands/report/html/__init__.py's
  // fragment() builds them), split before decoding, so "&", "=", "%", "#" and any text round-trip; a part
  // that does not decode (a hand-edited stray "%") is taken as it is.
  function defaults() {
    return { task: "", verdicts: [], fields: {}, q: "", run: 0, a: 0, b: 1, pair: "", page: 0, doc: "" };
  }
  function decode(x) {
    try { return decodeURIComponent(x); } catch (e) { return x; }
  }
  function parseHash() {
    const st = defaults();
    const h = location.hash || "";
    if (!h.startsWith("#samples")) return null;
    const i = h.indexOf("?");
    for (const part of (i >= 0 ? h.slice(i + 1) : "").split("&")) {
      if (!part) continue;
      const j = part.indexOf("=");
      const k = decode(j < 0 ? part : part.slice(0, j));
      const v = decode(j < 0 ? "" : part.slice(j + 1));
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
  function fragment(parts) {
    return "#samples?" + parts.map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(String(v))).join("&");
  }
  function writeHash(st) {
    const parts = [];
    if (st.task) parts.push(["task", st.task]);
    if (st.verdicts.length) parts.push(["verdict", st.verdicts.join(",")]);
    for (const [k, v] of Object.entries(st.fields)) if (v) parts.push(["f." + k, v]);
    if (st.q) parts.push(["q", st.q]);
    if (st.run) parts.push(["run", st.run]);
    if (st.pair) parts.push(["pair", st.pair], ["a", st.a], ["b", st.b]);
    if (st.page) parts.push(["page", st.page]);
    if (st.doc) parts.push(["doc", st.doc]);
    const h = fragment(parts);
    if (location.hash !== h) history.replaceState(null, "", h);
  }

  // ------------------------------------------------------------------ data loading (script tags)
  function tasksOf(name) {
    const idx = S.index;
    if (idx.groups[name]) return idx.groups[name].filter((t) => idx.byName[t] !== undefined);
    return idx.byName[name] !== undefined ? [name] : [];
  }
  function script(key, src, fail, done) {
    (S.waiting[key] = S.waiting[key] || []).push(done);
    if (S.waiting[key].length > 1) return;
    const s = document.createElement("script");
    s.src = src;
    s.onerror = () => { fail(); for (const f of S.waiting[key].splice(0)) f(); };
    document.head.appendChild(s);
  }
  function loadAll(jobs, done) {
    // jobs: [key, src, isLoaded(), fail()]: script files to load, then done()
    const todo = jobs.filter((j) => !j[2]());
    if (!todo.length) return done();
    let left = todo.length;
    for (const [key, src, , fail] of todo) script(key, src, fail, () => { if (--left === 0) done(); });
  }
  function load(names, done) {
    loadAll(names.map((t) => [t, S.index.tasks[S.index.byName[t]].file, () => !!S.loaded[t], () => { S.loaded[t] = { docs: [], no_verdict: [], error: "could not load " + S.index.tasks[S.index.byName[t]].file }; }]), done);
  }
  function fullRuns(st) {
    const n = S.index.runs.length;
    if (n <= S.index.full_runs) return [...Array(n).keys()];
    return [...new Set([st.run, st.a, st.b, ...S.extraRuns])].filter((i) => i >= 0 && i < n).sort((x, y) => x - y);
  }
  function loadDetails(names, runs, done) {
    const jobs = [];
    for (const t of names) {
      const files = S.index.tasks[S.index.byName[t]].details || [];
      for (const i of runs) if (files[i]) jobs.push([t + "#" + i, files[i], () => !!(S.details[t] && S.details[t][i]), () => { (S.details[t] = S.details[t] || {})[i] = {}; }]);
    }
    loadAll(jobs, done);
  }
  function detailOf(t, d, i) {
    const byRun = S.details[t];
    return byRun && byRun[i] ? byRun[i][d.id] || null : undefined; // undefined: not loaded
  }

  // ------------------------------------------------------------------ filtering
  function docsOf(names) {
    const out = [];
    for (const t of names) for (const d of (S.loaded[t] || { docs: [] }).docs) out.push([t, d]);
    return out;
  }
  function searcher(q) {
    // case-insensitive, without keeping a lower-cased copy of every doc's text
    if (!q) return null;
    const re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
    const runs = fullRuns(S.state);
    return (t, d) => {
      if (re.test(d.prompt)) return true;
      for (const i of runs) {
        const x = detailOf(t, d, i);
        if (!x) continue;
        if (x.prompt && re.test(x.prompt)) return true;
        for (const r of x.responses) if (re.test(r)) return true;
      }
      return false;
    };
  }
  function verdictOf(d, i) { const r = d.runs[i]; return r ? r.verdict : "missing"; }
  function verdictMatch(v, wanted) { return wanted.includes(v) || (wanted.includes("not_right") && NOT_RIGHT.has(v)); }
  function matches(t, d, st, skip, search) {
    if (skip !== "verdict" && st.verdicts.length && !verdictMatch(verdictOf(d, st.run), st.verdicts)) return false;
    for (const [k, v] of Object.entries(st.fields)) if (v && d.fields[k] !== v) return false;
    if (search && !search(t, d)) return false;
    if (st.pair) {
      // McNemar's cells: right in one run, not right (wrong, no answer, judge failed) in the other; a doc
      // one run lacks, or without a verdict, is in neither
      const va = verdictOf(d, st.a), vb = verdictOf(d, st.b);
      const aR = va === "right" && NOT_RIGHT.has(vb), bR = vb === "right" && NOT_RIGHT.has(va);
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

  function countVerdicts(all, st, search) {
    const counts = {};
    for (const [t, d] of all) if (matches(t, d, st, "verdict", search)) { const v = verdictOf(d, st.run); counts[v] = (counts[v] || 0) + 1; }
    counts.not_right = [...NOT_RIGHT].reduce((n, v) => n + (counts[v] || 0), 0);
    return counts;
  }

  function controls(all, st, counts) {
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
    // verdict checkboxes, each with its count under the other filters; "not right" first, the union of
    // wrong, no answer and judge failed (what the paired comparisons count as wrong)
    const vbox = el("span", { cls: "verdicts" });
    const toggle = (v, cb) => {
      const set = new Set(S.state.verdicts);
      if (cb.checked) set.add(v); else set.delete(v);
      setState({ verdicts: [...set] });
    };
    for (const [v, label, title] of [["not_right", "not right", "wrong, no answer or judge failed: what the paired comparisons count as wrong"], ...Object.entries(VERDICT_LABEL).map(([k, l]) => [k, l, null])]) {
      const cb = el("input", { type: "checkbox", id: "f-verdict-" + v, checked: st.verdicts.includes(v) });
      cb.addEventListener("change", () => toggle(v, cb));
      vbox.appendChild(el("label", { cls: "verdict v-" + v, title: title }, cb, " " + label + " ", el("span", { cls: "count", id: "count-" + v, text: counts[v] || 0 })));
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
    const many = idx.runs.length > idx.full_runs;
    const q = el("input", { type: "search", id: "f-q", placeholder: many ? "text in prompt or the shown runs' responses" : "text in prompt or response", value: st.q });
    q.addEventListener("change", () => setState({ q: q.value }));
    q.addEventListener("keyup", (e) => { if (e.key === "Enter") setState({ q: q.value }); });
    box.appendChild(q);
    if (idx.runs.length > 1) {
      const pair = el("select", { id: "f-pair", onchange: (e) => setState({ pair: e.target.value }) });
      for (const [v, label] of [["", "all docs"], ["any", "A and B disagree"], ["a_right", "A right, B not right"], ["b_right", "B right, A not right"]]) pair.appendChild(el("option", { value: v, text: label }));
      pair.value = st.pair;
      const ab = (key) => {
        const s = el("select", { id: "f-" + key, onchange: (e) => setState({ [key]: parseInt(e.target.value, 10) }) });
        idx.runs.forEach((r, i) => s.appendChild(el("option", { value: i, text: r })));
        s.value = String(st[key]);
        return s;
      };
      box.appendChild(el("label", {}, "A ", ab("a"), " B ", ab("b"), " ", pair));
    }
    const exp = el("span", { cls: "export" });
    exp.appendChild(el("button", { id: "export-jsonl", onclick: () => exportDocs("jsonl") }, "export JSONL"));
    exp.appendChild(el("button", { id: "export-csv", onclick: () => exportDocs("csv") }, "export CSV"));
    box.appendChild(exp);
    return box;
  }

  // where the docs are when a verdict filter shows none: "9 docs have no answer"
  function emptyHint(st, counts) {
    const where = Object.keys(VERDICT_LABEL).filter((v) => counts[v]).map((v) => counts[v] + (counts[v] === 1 ? " doc " : " docs ") + (v === "no_answer" ? (counts[v] === 1 ? "has no answer" : "have no answer") : (counts[v] === 1 ? "is " : "are ") + VERDICT_LABEL[v]));
    if (!where.length) return "No doc matches these filters.";
    const wanted = st.verdicts.map((v) => '"' + (v === "not_right" ? "not right" : VERDICT_LABEL[v] || v) + '"').join(" or ");
    return "No " + wanted + " doc under the other filters: " + where.join(", ") + ".";
  }

  // ------------------------------------------------------------------ figures and the overlay
  function openOverlay(items, at) {
    // items: [{src, large (or null), caption}]; a key or a click closes it, arrows step through items
    const old = document.getElementById("overlay");
    if (old) old.remove();
    let i = at;
    const img = el("img", { id: "overlay-img", alt: "" });
    const cap = el("p", { id: "overlay-caption" });
    const box = el("div", { id: "overlay", role: "dialog", "aria-modal": "true", tabindex: "-1" }, img, cap);
    const show = () => {
      const it = items[i];
      img.src = it.large || it.src;
      img.alt = it.caption;
      cap.textContent = it.caption + (it.large ? "" : " (thumbnail only: this doc's large copy is past the report's figure budget, report --figure-budget)") + (items.length > 1 ? "  ·  " + (i + 1) + " of " + items.length + " (← →)" : "") + "  ·  Esc or click closes";
    };
    const close = () => { box.remove(); document.removeEventListener("keydown", key); };
    const key = (e) => {
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") { i = (i + (e.key === "ArrowRight" ? 1 : items.length - 1)) % items.length; show(); e.preventDefault(); }
      else close();
    };
    box.addEventListener("click", close);
    document.addEventListener("keydown", key);
    document.body.appendChild(box);
    show();
    box.focus();
  }

  function images(d) {
    const box = el("div", { cls: "images" });
    if (typeof d.images === "string") box.appendChild(el("div", { cls: "placeholder", text: "figures not available: " + d.images }));
    else if (Array.isArray(d.images)) {
      const items = d.images.map((src, i) => {
        const label = d.image_labels && d.image_labels[i] ? d.image_labels[i] : String(i + 1);
        return { src: "browser/img/" + src, large: d.large ? "browser/large/" + src : null, caption: "figure " + label + " of doc " + d.id, label };
      });
      items.forEach((it, i) => {
        const img = el("img", { src: it.src, alt: it.caption, loading: "lazy", title: "click to enlarge", cls: "zoom" });
        img.addEventListener("error", () => img.replaceWith(el("div", { cls: "placeholder", text: "figure " + it.label + " is missing" })));
        img.addEventListener("click", () => openOverlay(items, i));
        const picks = d.runs.map((r, k) => (r && r.answer === it.label ? S.index.runs[k] : null)).filter((x) => x);
        const gold = d.image_labels && it.label === d.gold;
        const cap = el("figcaption", { text: it.label + (gold ? " (gold)" : "") + (picks.length ? " ← " + picks.join(", ") : "") });
        box.appendChild(el("figure", { cls: gold ? "gold" : null }, img, cap));
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

  function verdictLine(r, why) {
    const p = el("p", { cls: "verdictline" }, el("span", { cls: "verdict v-" + r.verdict, text: VERDICT_LABEL[r.verdict] || r.verdict }), r.score === null || r.score === undefined ? "" : " score " + r.score);
    if (r.verdict === "no_verdict" && why) p.appendChild(el("span", { cls: "why", text: " — " + why }));
    return p;
  }
  function scoredLine(r) {
    const ans = el("p", { cls: "answer" }, "scored: ", el("code", { text: r.answer === null || r.answer === undefined ? "(no answer)" : r.answer }));
    if (r.detail) ans.appendChild(el("span", { cls: "detail", text: " · " + r.detail }));
    if (r.stage) ans.appendChild(el("span", { cls: "stage", text: " · extraction: " + r.stage }));
    return ans;
  }

  // what size each figure reached the model at, as the run read it from its own request
  function figuresSeen(figs) {
    const px = (s) => (Array.isArray(s) ? s[0] + " x " + s[1] : "?");
    const parts = figs.map((f, k) => "figure " + (k + 1) + " reached the model at " + px(f.reached) + (f.sent && px(f.sent) !== px(f.reached) ? " (sent " + px(f.sent) + ")" : "") +
      (f.tokens === null || f.tokens === undefined ? "" : ", " + f.tokens.toLocaleString("en-US") + " visual tokens"));
    return el("p", { cls: "figures-seen", text: parts.join("; ") });
  }

  function runView(t, d, i, why, samePrompt) {
    const r = d.runs[i], name = S.index.runs[i];
    const col = el("div", { cls: "run" });
    col.appendChild(el("h4", { text: name }));
    if (!r) { col.appendChild(el("p", { cls: "missing", text: "not in this run" })); return col; }
    col.appendChild(verdictLine(r, why));
    col.appendChild(scoredLine(r));
    const x = detailOf(t, d, i);
    if (x === undefined) { col.appendChild(el("p", { cls: "loading", text: "loading ..." })); return col; }
    if (x === null) return col;
    x.responses.forEach((txt, k) => col.appendChild(el("details", { open: k === 0 }, el("summary", { text: x.responses.length > 1 ? "raw response " + (k + 1) + " of " + x.responses.length : "raw response" }), el("pre", { cls: "response", text: txt }))));
    if (x.filtered !== null && x.filtered !== undefined && !(x.responses.length === 1 && x.responses[0].trim() === x.filtered.trim())) col.appendChild(el("details", {}, el("summary", { text: "filtered response" }), el("pre", { text: x.filtered })));
    if (x.figures && x.figures.length) col.appendChild(figuresSeen(x.figures));
    if (!samePrompt && x.prompt) col.appendChild(el("details", {}, el("summary", { text: "prompt as sent in this run" }), el("pre", { text: x.prompt })));
    if (x.judge) col.appendChild(el("details", { open: r.verdict === "judge_failed" }, el("summary", { text: "judge: " + (x.judge.status || "") + (x.judge.cause ? " (" + x.judge.cause + ")" : "") }), kv(x.judge)));
    if (x.record && Object.keys(x.record).length) col.appendChild(el("details", {}, el("summary", { text: "record (" + x.metric + ")" }), kv(x.record)));
    return col;
  }

  // the runs not shown in full (past FULL_RUNS runs): one line each, a button to open one
  function otherRuns(d, shown, whyOf) {
    const t = el("table", { cls: "others" });
    d.runs.forEach((r, i) => {
      if (shown.includes(i)) return;
      const more = el("button", { cls: "more", onclick: () => { S.extraRuns.add(i); render(); } }, "show in full");
      t.appendChild(el("tr", {}, el("th", { text: S.index.runs[i] }), el("td", {}, r ? verdictLine(r, whyOf(i)) : "not in this run"), el("td", {}, r ? scoredLine(r) : ""), el("td", {}, r ? more : "")));
    });
    return t.childNodes.length ? el("details", { cls: "otherruns" }, el("summary", { text: "the other " + t.childNodes.length + " runs" }), t) : null;
  }

  function docView(t, d, shown) {
    const data = S.loaded[t];
    const whyOf = (i) => (data.no_verdict || [])[i];
    const card = el("article", { cls: "doc", id: "doc-" + t + "-" + d.id, "data-task": t, "data-doc": d.id });
    const head = el("header", {}, el("strong", { text: t + " · doc " + d.id }));
    for (const [k, v] of Object.entries(d.fields)) head.appendChild(el("span", { cls: "field", text: k + ": " + v }));
    head.appendChild(el("a", { href: fragment([["task", t], ["doc", d.id]]), text: "link" }));
    card.appendChild(head);
    if (d.prompts_differ) card.appendChild(el("p", { cls: "warning", text: "The runs' prompts for this doc differ (another dataset revision or task version?): a run whose prompt differs from the one below shows its own." }));
    card.appendChild(images(d));
    card.appendChild(el("details", {}, el("summary", { text: "prompt" }), el("pre", { cls: "prompt", text: d.prompt })));
    card.appendChild(el("p", {}, "gold: ", el("code", { text: d.gold })));
    if (d.options) card.appendChild(crossTable(d.options, false));
    if (d.pair !== undefined) card.appendChild(crossTable(typeof d.pair === "number" ? data.views[d.pair] : d.pair, true));  // shared by a claim's docs
    const runs = el("div", { cls: "runs" });
    for (const i of shown) runs.appendChild(runView(t, d, i, whyOf(i), !d.prompts_differ));
    card.appendChild(runs);
    const others = otherRuns(d, shown, whyOf);
    if (others) card.appendChild(others);
    return card;
  }

  function chartsBox(names) {
    const charts = [];
    for (const t of names) for (const c of S.index.tasks[S.index.byName[t]].charts || []) charts.push(c);
    if (!charts.length) return null;
    const box = el("details", { cls: "taskcharts" }, el("summary", { text: "this task's charts (" + charts.length + ")" }));
    const items = charts.map((c) => ({ src: c, large: c, caption: c }));
    charts.forEach((c, i) => {
      const img = el("img", { src: c, alt: c, loading: "lazy", title: "click to enlarge", cls: "zoom" });
      img.addEventListener("click", () => openOverlay(items, i));
      box.appendChild(img);
    });
    return box;
  }

  // the runs whose prompts of these tasks did not reach the model as the authors laid them out (the run's
  // own check, metadata.earthsci_layout): lost (not comparable with the paper), not observed, or decided by a server
  // the entries of the tasks' ``field`` (layout, budget), one per key (a run and what is said of it), each
  // with the tasks that share it
  function grouped(names, field, keyOf) {
    const seen = new Map();
    for (const t of names) for (const x of S.index.tasks[S.index.byName[t]][field] || []) {
      const key = JSON.stringify(keyOf(x));
      if (!seen.has(key)) seen.set(key, { x: x, tasks: [] });
      seen.get(key).tasks.push(t);
    }
    return seen;
  }

  function layoutBanner(names) {
    // one line per run and verdict, naming its tasks when a group is shown
    const seen = grouped(names, "layout", (x) => [x.run, x.status, x["class"], x.lost, x.fix]);
    if (!seen.size) return null;
    const box = el("div", { cls: "warning layout", id: "layout-banner" });
    for (const { x, tasks } of seen.values()) {
      const where = names.length > 1 ? " (" + tasks.join(", ") + ")" : "";
      box.appendChild(el("p", { text: x.status === "lost"
        ? "\u26a0 " + x.run + where + ": not the authors' layout (" + x["class"] + ": " + (x.lost.join("; ") || "lost") + "), not comparable with the paper's number. Fix: " + (x.fix || "see lmms-eval-earthsci check-model") + "."
        : x.status === "layout not observed: check-model"
        ? "\u2020 " + x.run + where + ": layout not observed: check-model (" + x["class"] + (x.fix ? ": " + x.fix : "") + "); lmms-eval-earthsci check-model says whether the authors' layout reaches this class."
        : x.run + where + " (" + x["class"] + "): sent as written; the server decides the layout: " + (x.fix || "check its chat template") + "." }));
    }
    return box;
  }

  // the size each run's figures reached the model at (budget of the task's entry): one line per run and
  // wording, naming its tasks when a group is shown; "\u2260" and the note where it differs from the
  // run the report holds it against (not the same input)
  function budgetBanner(names) {
    const seen = grouped(names, "budget", (x) => [x.run, x["class"], x.text, x.differs || ""]);
    if (!seen.size) return null;
    const box = el("div", { cls: "budget", id: "budget-banner" });
    for (const { x, tasks } of seen.values()) {
      const where = names.length > 1 ? " (" + tasks.join(", ") + ")" : "";
      box.appendChild(el("p", { text: (x.differs ? "\u2260 " : "") + x.run + where + (x["class"] ? " (" + x["class"] + ")" : "") + ": " + x.text + "."
        + (x.differs ? " " + x.differs.charAt(0).toUpperCase() + x.differs.slice(1) + "." : "") }));
    }
    return box;
  }

  let lastFiltered = [];
  function render() {
    const st = S.state, root = S.root;
    const names = tasksOf(st.task);
    root.textContent = "";
    if (!names.length) { root.appendChild(el("p", { text: "No samples for " + st.task + " (was the run made with --log_samples?)." })); return; }
    if (names.some((t) => !S.loaded[t])) { root.appendChild(el("p", { cls: "loading", text: "loading " + st.task + " ..." })); load(names, render); return; }
    const shownRuns = fullRuns(st);
    // the shown runs' details: the list is drawn at once (verdicts and answers are in the task's file),
    // the cards' responses when they arrive; a text search waits for them
    const unloaded = names.some((t) => shownRuns.some((i) => (S.index.tasks[S.index.byName[t]].details || [])[i] && !(S.details[t] && S.details[t][i])));
    if (unloaded) {
      loadDetails(names, shownRuns, render);
      if (st.q) { root.appendChild(el("p", { cls: "loading", text: "loading " + st.task + " ..." })); return; }
    }
    const all = docsOf(names);
    const t0 = performance.now();
    const search = searcher(st.q);
    const shown = all.filter(([t, d]) => matches(t, d, st, null, search));
    lastFiltered = shown;
    const counts = countVerdicts(all, st, search);
    const banner = layoutBanner(names);
    if (banner) root.appendChild(banner);
    const sizes = budgetBanner(names);
    if (sizes) root.appendChild(sizes);
    root.appendChild(controls(all, st, counts));
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    const page = Math.min(st.page, pages - 1);
    const nav = el("div", { cls: "nav" });
    nav.appendChild(el("span", { id: "match-count", text: shown.length + " of " + all.length + " docs" }));
    nav.appendChild(el("button", { disabled: page === 0, onclick: () => setState({ page: page - 1 }) }, "previous"));
    nav.appendChild(el("span", { text: " page " + (page + 1) + " of " + pages + " " }));
    nav.appendChild(el("button", { disabled: page >= pages - 1, onclick: () => setState({ page: page + 1 }) }, "next"));
    root.appendChild(nav);
    if (!shown.length && all.length) root.appendChild(el("p", { id: "empty-hint", cls: "warning", text: st.verdicts.length ? emptyHint(st, counts) : "No doc matches these filters." }));
    const charts = chartsBox(names);
    if (charts) root.appendChild(charts);
    const list = el("div", { cls: "docs" });
    for (const [t, d] of shown.slice(page * PAGE, (page + 1) * PAGE)) list.appendChild(docView(t, d, shownRuns));
    root.appendChild(list);
    root.setAttribute("data-filter-ms", String(Math.round(performance.now() - t0)));
    if (S.scrollPending) { S.scrollPending = false; document.getElementById("samples").scrollIntoView(); }
    for (const t of names) if (S.loaded[t].error) root.appendChild(el("p", { cls: "warning", text: S.loaded[t].error }));
  }

  // ------------------------------------------------------------------ exports
  // a spreadsheet runs a cell beginning with = + - @ (or a tab or carriage return) as a formula: such a
  // cell gets a leading ' (OWASP's rule; the report's summary.csv does the same)
  function csvCell(v) {
    let s = String(v === null || v === undefined ? "" : v);
    if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return '"' + s.replace(/"/g, '""') + '"';
  }
  function exportDocs(kind) {
    const idx = S.index;
    const names = tasksOf(S.state.task);
    // every run's responses are exported: load the details of the runs not shown in full first
    loadDetails(names, [...idx.runs.keys()], () => {
      const rows = lastFiltered.map(([t, d]) => ({
        task: t, doc_id: d.id, fields: d.fields, gold: d.gold,
        runs: d.runs.map((r, i) => {
          if (!r) return null;
          const x = detailOf(t, d, i) || { responses: [] };
          return { run: idx.runs[i], verdict: r.verdict, score: r.score, scored_answer: r.answer, scored_detail: r.detail, stage: r.stage, response: x.responses.join("\n---\n") };
        }),
      }));
      let body, type;
      if (kind === "jsonl") { body = rows.map((r) => JSON.stringify(r)).join("\n") + "\n"; type = "application/x-ndjson"; }
      else {
        const head = ["task", "doc_id", "gold"];
        idx.runs.forEach((r, i) => head.push("run" + i + "_verdict", "run" + i + "_scored_answer", "run" + i + "_scored_detail", "run" + i + "_response"));
        const lines = [head.map(csvCell).join(",")];
        for (const r of rows) {
          const cells = [r.task, r.doc_id, r.gold];
          r.runs.forEach((x) => cells.push(x ? x.verdict : "", x ? x.scored_answer : "", x ? x.scored_detail : "", x ? x.response : ""));
          lines.push(cells.map(csvCell).join(","));
        }
        body = lines.join("\n") + "\n"; type = "text/csv";
      }
      const url = URL.createObjectURL(new Blob([body], { type }));
      const a = el("a", { href: url, download: "samples." + kind });
      document.body.appendChild(a); a.click(); a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000); // the download has its copy by then
    });
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
    details(name, run, data) {
      (S.details[name] = S.details[name] || {})[run] = data;
      for (const f of (S.waiting[name + "#" + run] || []).splice(0)) f();
    },
  };
  window.addEventListener("hashchange", () => {
    const st = parseHash();
    if (st && S.index) { if (!st.task || !tasksOf(st.task).length) st.task = S.state.task; S.state = st; S.scrollPending = true; render(); }
  });
})();
