"use strict";
// ovniview: draws the timeline of #ovniview-data on a canvas. Times are ns from the trace's
// start; the URL fragment holds the window as raw clocks (#t0=<ns>&t1=<ns>[&view=cpu]).
(function () {
  const D = JSON.parse(document.getElementById("ovniview-data").textContent);
  const START = BigInt(D.start);
  const DUR = Math.max(D.dur, 1);
  const W = D.widths;
  const LABEL_W = 240, ROW_H = 15, GROUP_H = 17, AXIS_H = 24;
  const STATE_COL = ["#c8c8c8", "#3f9f4f", "#9ecae1", "#4d4d4d", "#2171b5", "#f39c4a"];
  const STATE_EV = ["(before its first event)", "OHx or OHr", "OHp", "OHe", "OHc", "OHw"];

  // A list as the page stores it: base64 of LEB128 varints, field `signed` of each triple
  // zigzag-coded (crates/ovni-view/src/lod.rs, `encode`).
  function unpack(text, signed) {
    const bin = atob(text), n = bin.length, out = [];
    let x = 0, mul = 1, i = 0;
    for (let p = 0; p < n; p++) {
      const b = bin.charCodeAt(p);
      x += (b & 0x7f) * mul;
      if (b < 0x80) {
        if (i % 3 === signed) x = x % 2 === 1 ? -(x + 1) / 2 : x / 2;
        out.push(x); x = 0; mul = 1; i++;
      } else mul *= 128;
    }
    return out;
  }
  function decodeExact(a) {
    const n = Math.floor(a.length / 3);
    const t0 = new Float64Array(n), du = new Float64Array(n), v = new Float64Array(n);
    let t = 0, maxd = 0;
    for (let i = 0; i < n; i++) {
      t += a[3 * i]; t0[i] = t; du[i] = a[3 * i + 1]; v[i] = a[3 * i + 2];
      if (du[i] > maxd) maxd = du[i];
    }
    return { n, t0, du, v, maxd };
  }
  function decodeBuckets(a) {
    const n = Math.floor(a.length / 3);
    const idx = new Float64Array(n), v = new Float64Array(n), cov = new Uint8Array(n);
    let b = 0;
    for (let i = 0; i < n; i++) { b += a[3 * i]; idx[i] = b; v[i] = a[3 * i + 1]; cov[i] = a[3 * i + 2]; }
    return { n, idx, v, cov };
  }
  // Levels are parsed and decoded when first drawn: the first view only needs the coarsest.
  const parsed = [];
  let parsedRest = null;
  function levelData(k) {
    return parsed[k] || (parsed[k] = JSON.parse(document.getElementById("ovniview-level-" + k).textContent));
  }
  function restData() {
    return parsedRest || (parsedRest = JSON.parse(document.getElementById("ovniview-rest").textContent));
  }
  const rows = D.rows.map(function (r, i) {
    return { i: i, k: r.k, ty: r.ty, d: r.d, ge: [], gb: [], gr: null, open: new Set(r.o) };
  });

  function group(row, g) { return row.ge[g] || (row.ge[g] = decodeExact(unpack(levelData(g).e[row.i], 2))); }
  function bucketsOf(row, k) { return row.gb[k] || (row.gb[k] = decodeBuckets(unpack(levelData(k).b[row.i], 1))); }
  function restOf(row) { return row.gr || (row.gr = decodeExact(unpack(restData()[row.i], 2))); }
  function drawn(row, p) {
    const gs = [];
    for (let g = 0; g < p.ng && g < W.length; g++) gs.push(group(row, g));
    if (p.rest) gs.push(restOf(row));
    return gs;
  }

  const canvas = document.getElementById("ov-canvas");
  const view = document.getElementById("ov-view");
  const tip = document.getElementById("ov-tip");
  const panel = document.getElementById("ov-events");
  const ctx = canvas.getContext("2d");
  let cpuMode = false, v0 = 0, v1 = DUR, lines = [], cw = 800;
  // Without a thread on a real CPU the CPU view would stack every thread on a virtual CPU.
  const HAS_CPUS = D.cpus.length > 0;

  function typeTitle(ty) { const t = D.types[ty]; return t ? t.title : "mark " + ty; }
  function valueLabel(row, v) {
    if (row.k === "s") return D.states[v] || String(v);
    if (row.k === "c") { const th = D.threads[v]; return th ? th.name : String(v); }
    const t = D.types[row.ty];
    return t && t.labels[v] !== undefined ? t.labels[v] : String(v);
  }
  function color(row, v) {
    if (row.k === "s") return STATE_COL[v] || "#999";
    const h = row.k === "c" ? (v * 137.508) % 360 : ((v * 137.508 + row.ty * 47) % 360 + 360) % 360;
    return "hsl(" + h.toFixed(0) + ",55%," + (row.k === "c" ? 55 : 64) + "%)";
  }

  function layout() {
    lines = [];
    if (cpuMode) {
      for (const c of D.cpus) lines.push({ row: rows[c.rows[0]], label: c.name, h: ROW_H });
    } else {
      let group = null;
      D.threads.forEach(function (th, i) {
        if (th.group !== group) { group = th.group; lines.push({ group: group, h: GROUP_H }); }
        th.rows.forEach(function (id, j) {
          const row = rows[id];
          let label = th.name + (th.flags.length ? " \u26a0" : "");
          if (j > 0) label = "  " + typeTitle(row.ty) + (row.d > 0 ? " \u00b7" + row.d : "");
          lines.push({ row: row, label: label, h: ROW_H, thread: i, first: j === 0 });
        });
      });
    }
    let h = AXIS_H;
    for (const l of lines) { l.y = h; h += l.h; }
    cw = Math.max(400, view.clientWidth || 800);
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(cw * dpr); canvas.height = Math.round(h * dpr);
    canvas.style.width = cw + "px"; canvas.style.height = h + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  function num(x, digits) {
    const s = x.toFixed(digits);
    return s.indexOf(".") < 0 ? s : s.replace(/0+$/, "").replace(/\.$/, "");
  }
  function fmt(ns, step) {
    const a = Math.abs(step || ns);
    if (a >= 1e9) return num(ns / 1e9, 3) + " s";
    if (a >= 1e6) return num(ns / 1e6, 3) + " ms";
    if (a >= 1e3) return num(ns / 1e3, 3) + " \u00b5s";
    return Math.round(ns) + " ns";
  }
  function niceStep(x) {
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(x, 1))));
    for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }
  function lowerBound(arr, n, x) {
    let lo = 0, hi = n;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  // The coarsest level whose buckets are at most 2 pixels wide.
  function level(nsPerPx) {
    for (let k = 0; k < W.length; k++) if (W[k] <= 2 * nsPerPx) return k;
    return W.length;
  }
  // The exact groups and the buckets drawn at this zoom.
  function plan(nsPerPx) {
    const k = level(nsPerPx);
    if (k < W.length) return { ng: k + 1, rest: false, bk: k };
    return { ng: W.length, rest: D.complete, bk: D.complete ? -1 : W.length - 1 };
  }
  function xOf(t, nsPerPx) { return LABEL_W + (t - v0) / nsPerPx; }

  function drawExact(g, row, y, nsPerPx) {
    let i = lowerBound(g.t0, g.n, v0 - g.maxd);
    for (; i < g.n && g.t0[i] <= v1; i++) {
      const t0 = g.t0[i], t1 = t0 + g.du[i];
      if (t1 < v0) continue;
      const x0 = Math.max(LABEL_W, xOf(t0, nsPerPx)), x1 = Math.min(cw, xOf(t1, nsPerPx));
      const w = Math.max(1, x1 - x0);
      ctx.fillStyle = color(row, g.v[i]);
      ctx.fillRect(x0, y + 1, w, ROW_H - 2);
      if (row.open.has(t0)) { ctx.fillStyle = "#d00"; ctx.fillRect(x0 + w - 3, y + 1, 3, ROW_H - 2); }
      if (w > 30 && row.k !== "s") {
        ctx.fillStyle = "#000";
        ctx.save(); ctx.beginPath(); ctx.rect(x0, y, w, ROW_H); ctx.clip();
        ctx.fillText(valueLabel(row, g.v[i]), x0 + 2, y + ROW_H - 4);
        ctx.restore();
      }
    }
  }
  function drawBuckets(b, wk, row, y, nsPerPx) {
    let i = lowerBound(b.idx, b.n, Math.floor(v0 / wk) - 1);
    for (; i < b.n && b.idx[i] * wk <= v1; i++) {
      const x0 = Math.max(LABEL_W, xOf(b.idx[i] * wk, nsPerPx));
      const x1 = Math.min(cw, xOf((b.idx[i] + 1) * wk, nsPerPx));
      const h = Math.max(2, Math.round((ROW_H - 2) * b.cov[i] / 100));
      ctx.fillStyle = color(row, b.v[i]);
      ctx.fillRect(x0, y + ROW_H - 1 - h, Math.max(1, x1 - x0), h);
    }
  }

  function draw() {
    const pw = cw - LABEL_W, nsPerPx = (v1 - v0) / pw, p = plan(nsPerPx);
    ctx.clearRect(0, 0, cw, canvas.height);
    ctx.font = "11px system-ui, sans-serif";
    // Time axis, relative to the trace's start.
    const step = niceStep(nsPerPx * 110);
    ctx.fillStyle = "#333"; ctx.strokeStyle = "#e4e4e4";
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = xOf(t, nsPerPx);
      ctx.fillText(fmt(t, step), x + 2, 14);
      ctx.beginPath(); ctx.moveTo(x + 0.5, 17); ctx.lineTo(x + 0.5, canvas.height); ctx.stroke();
    }
    for (const l of lines) {
      if (l.group !== undefined) {
        ctx.fillStyle = "#eef"; ctx.fillRect(0, l.y, cw, l.h);
        ctx.fillStyle = "#114"; ctx.fillText(l.group, 4, l.y + 12);
        continue;
      }
      const th = l.thread !== undefined ? D.threads[l.thread] : null;
      ctx.fillStyle = th && th.flags.length && l.first ? "#b35c00" : "#222";
      ctx.fillText(l.label, 4, l.y + ROW_H - 4, LABEL_W - 8);
      const row = l.row;
      for (const g of drawn(row, p)) drawExact(g, row, l.y, nsPerPx);
      if (p.bk >= 0 && p.bk < W.length) drawBuckets(bucketsOf(row, p.bk), W[p.bk], row, l.y, nsPerPx);
      if (th && th.flags.length && th.end !== null && l.first) {
        // A crashed thread: where its trace stops.
        const x = xOf(th.end, nsPerPx);
        if (x >= LABEL_W && x <= cw) { ctx.fillStyle = "#d00"; ctx.fillRect(x, l.y, 2, ROW_H); }
      }
    }
    ctx.fillStyle = "#999"; ctx.fillRect(LABEL_W - 1, 0, 1, canvas.height);
    document.getElementById("ov-window").textContent =
      "window " + fmt(v0) + " \u2013 " + fmt(v1) + " (" + fmt(v1 - v0) + ")";
    document.getElementById("ov-detail").textContent =
      p.bk >= 0 && p.ng === W.length && !D.complete && level(nsPerPx) >= W.length
        ? "detail aggregated at this zoom (page size limit)" : "";
    const mark = document.getElementById("ovniview-render");
    mark.dataset.view = (START + BigInt(Math.round(v0))) + "," + (START + BigInt(Math.round(v1)));
    mark.dataset.mode = cpuMode ? "cpu" : "threads";
    document.getElementById("ov-cpu").textContent = cpuMode ? "thread view" : "CPU view";
    if (legendMode !== cpuMode) { legendMode = cpuMode; legend(); }
    tablesLater();
  }

  function setWindow(a, b) {
    let w = Math.min(Math.max(b - a, 10), DUR);
    a = Math.min(Math.max(a, 0), DUR - w);
    v0 = a; v1 = a + w;
    history.replaceState(null, "", "#t0=" + (START + BigInt(Math.round(v0))) + "&t1=" +
      (START + BigInt(Math.round(v1))) + (cpuMode ? "&view=cpu" : ""));
    draw();
  }
  function readHash() {
    const h = new URLSearchParams(location.hash.replace(/^#/, ""));
    let a = 0, b = DUR;
    try {
      if (h.has("t0")) a = Number(BigInt(h.get("t0")) - START);
      if (h.has("t1")) b = Number(BigInt(h.get("t1")) - START);
    } catch (e) { a = 0; b = DUR; }
    if (!(b > a)) { a = 0; b = DUR; }
    const mode = h.get("view") === "cpu" && HAS_CPUS;
    if (mode !== cpuMode) { cpuMode = mode; layout(); }
    v0 = Math.max(0, a); v1 = Math.min(DUR, b);
    if (!(v1 > v0)) { v0 = 0; v1 = DUR; }
  }
  function zoom(f, at) {
    const t = at === undefined ? (v0 + v1) / 2 : at;
    setWindow(t - (t - v0) * f, t + (v1 - t) * f);
  }
  function toggleCpu() { if (HAS_CPUS) { cpuMode = !cpuMode; layout(); setWindow(v0, v1); } }

  // What is under the mouse: an exact interval or a bucket.
  function hit(ev) {
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (x < LABEL_W) return null;
    const l = lines.find(function (l) { return y >= l.y && y < l.y + l.h; });
    if (!l || !l.row) return null;
    const nsPerPx = (v1 - v0) / (cw - LABEL_W), t = v0 + (x - LABEL_W) * nsPerPx, p = plan(nsPerPx);
    for (const g of drawn(l.row, p)) {
      const tol = nsPerPx;
      let i = lowerBound(g.t0, g.n, t - g.maxd - tol);
      for (; i < g.n && g.t0[i] <= t + tol; i++) {
        if (g.t0[i] + g.du[i] + tol >= t) return { line: l, t0: g.t0[i], du: g.du[i], v: g.v[i] };
      }
    }
    if (p.bk >= 0 && p.bk < W.length) {
      const b = bucketsOf(l.row, p.bk), wk = W[p.bk], idx = Math.floor(t / wk);
      const i = lowerBound(b.idx, b.n, idx);
      if (i < b.n && b.idx[i] === idx) return { line: l, bucket: true, t0: idx * wk, du: wk, v: b.v[i], cov: b.cov[i] };
    }
    return null;
  }
  function raw(t) { return (START + BigInt(Math.round(t))).toString(); }
  function describe(h) {
    const row = h.line.row, lab = valueLabel(row, h.v);
    const what = row.k === "s" ? "state " + lab : row.k === "c" ? "thread " + lab
      : typeTitle(row.ty) + ": " + lab + " (value " + h.v + ")";
    if (h.bucket) {
      return "aggregated: short intervals cover " + h.cov + "% of " + fmt(h.t0) + " \u2013 " +
        fmt(h.t0 + h.du) + "\nmostly " + what + "\nzoom in for the exact intervals";
    }
    return what + "\n" + fmt(h.t0) + " \u2013 " + fmt(h.t0 + h.du) + "  (" + h.du + " ns)\nclock " +
      raw(h.t0) + " \u2013 " + raw(h.t0 + h.du);
  }
  function events(h) {
    const row = h.line.row, name = h.line.thread !== undefined ? D.threads[h.line.thread].name : h.line.label;
    if (h.bucket) return describe(h);
    const a = raw(h.t0), b = raw(h.t0 + h.du);
    if (row.k === "s") {
      return name + "\n" + STATE_EV[h.v] + " at clock " + a + ": enters " + D.states[h.v] +
        "\nnext state change (or the thread's last event) at clock " + b;
    }
    if (row.k === "c") {
      return name + "\nOHx/OHr/OHw or OAs at clock " + a + ": thread " + valueLabel(row, h.v) +
        " active on this CPU\nuntil clock " + b;
    }
    const open = row.open.has(h.t0);
    return name + "\nOM[ (or OM=) at clock " + a + ": push mark with value " + h.v + " from type " + row.ty +
      " \u2014 " + typeTitle(row.ty) + ": " + valueLabel(row, h.v) + "\n" +
      (open ? "never popped: still open at the thread's last event (clock " + b + ")"
        : "OM] (or the next OM=) at clock " + b + ": pop mark with value " + h.v + " from type " + row.ty) +
      "\nduration " + h.du + " ns";
  }

  // The legend: what the colours of the current view mean (text set as text, never markup).
  let legendMode = null;
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function swatch(parent, col, text) {
    const s = el("span", "lg-item");
    const box = el("i", "lg-box");
    box.style.background = col;
    s.appendChild(box); s.appendChild(document.createTextNode(text));
    parent.appendChild(s);
  }
  const LEGEND_VALUES = 12;
  function legend() {
    const box = document.getElementById("ov-legend");
    box.textContent = "";
    if (cpuMode) {
      const line = el("div", "lg-line");
      line.appendChild(el("b", "", "CPU rows, the thread active: "));
      D.threads.slice(0, LEGEND_VALUES).forEach(function (th, i) { swatch(line, color({ k: "c" }, i), th.name); });
      if (D.threads.length > LEGEND_VALUES) line.appendChild(el("span", "lg-more", "and " + (D.threads.length - LEGEND_VALUES) + " more threads"));
      box.appendChild(line);
      return;
    }
    const states = el("div", "lg-line");
    states.appendChild(el("b", "", "Thread states: "));
    D.states.forEach(function (name, v) { swatch(states, STATE_COL[v], name); });
    states.appendChild(el("span", "lg-more", "red cap: mark still open at the thread's last event; red line: where a crashed thread's trace stops; low bars: short intervals aggregated (zoom in)"));
    box.appendChild(states);
    for (const ty of Object.keys(D.types)) {
      const t = D.types[ty], vals = t.values;
      if (!vals) continue;
      const line = el("div", "lg-line");
      line.appendChild(el("b", "", t.title + " (" + ty + "): "));
      const row = { k: "m", ty: Number(ty) };
      if (Array.isArray(vals)) {
        vals.slice(0, LEGEND_VALUES).forEach(function (v) { swatch(line, color(row, v), valueLabel(row, v)); });
        if (vals.length > LEGEND_VALUES) line.appendChild(el("span", "lg-more", "and " + (vals.length - LEGEND_VALUES) + " more values"));
      } else {
        line.appendChild(el("span", "lg-more", vals.n + " values, " + vals.min + " to " + vals.max + ": one colour each, summarised in the tables"));
      }
      box.appendChild(line);
    }
  }

  // The tables of time per mark value and per thread state, for the window shown: from every
  // stored interval, so only on a complete page (else they stay those of the whole trace).
  const markTable = document.getElementById("ov-marks"), stateTable = document.getElementById("ov-states");
  const scope = document.getElementById("ov-table-scope");
  const wholeRows = [markTable, stateTable].map(function (t) {
    return t ? Array.prototype.slice.call(t.rows, 1).map(function (r) { return r.cloneNode(true); }) : [];
  });
  const wholeScope = scope ? scope.textContent : "";
  const before = scope ? scope.previousElementSibling : null;
  const afterCheckpoints = before !== null && before.tagName === "TABLE";
  let tablesFor = "0," + DUR, tablesTimer = null;
  // Every stored interval of a row, sorted by start (each level's list is sorted: merged).
  function allIntervals(row) {
    if (row.all) return row.all;
    const gs = [];
    for (let g = 0; g < W.length; g++) gs.push(group(row, g));
    gs.push(restOf(row));
    let n = 0;
    for (const g of gs) n += g.n;
    const t0 = new Float64Array(n), du = new Float64Array(n), v = new Float64Array(n), pos = gs.map(function () { return 0; });
    let maxd = 0;
    for (let i = 0; i < n; i++) {
      let best = -1;
      for (let j = 0; j < gs.length; j++) {
        if (pos[j] < gs[j].n && (best < 0 || gs[j].t0[pos[j]] < gs[best].t0[pos[best]])) best = j;
      }
      const g = gs[best], k = pos[best]++;
      t0[i] = g.t0[k]; du[i] = g.du[k]; v[i] = g.v[k];
      if (du[i] > maxd) maxd = du[i];
    }
    return (row.all = { n: n, t0: t0, du: du, v: v, maxd: maxd });
  }
  function humanNs(ns) {
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(2) + " \u00b5s";
    if (ns < 1e9) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  // The intervals of a row that overlap a..b, as [start, length, value].
  function inWindow(row, a, b) {
    const all = allIntervals(row), out = [];
    for (let i = lowerBound(all.t0, all.n, a - all.maxd); i < all.n && all.t0[i] < b; i++) {
      if (all.t0[i] + all.du[i] > a) out.push([all.t0[i], all.du[i], all.v[i]]);
    }
    return out;
  }
  function clipped(iv, a, b) { return Math.max(0, Math.min(iv[0] + iv[1], b) - Math.max(iv[0], a)); }
  // Per mark type of a thread: value -> [count, ns on top of its stack within a..b].
  function threadMarks(th, a, b) {
    const byType = new Map();
    th.rows.slice(1).forEach(function (id) {
      const r = rows[id];
      if (!byType.has(r.ty)) byType.set(r.ty, []);
      byType.get(r.ty)[r.d] = inWindow(r, a, b);
    });
    const out = new Map();
    byType.forEach(function (depths, ty) {
      const vals = new Map();
      const add = function (v, c, ns) { const e = vals.get(v) || [0, 0]; e[0] += c; e[1] += ns; vals.set(v, e); };
      for (let d = 0; d < depths.length; d++) {
        const list = depths[d] || [];
        for (const iv of list) add(iv[2], 1, clipped(iv, a, b));
        // Time under a deeper entry is not on top: take it from the entry around it.
        for (const q of depths[d + 1] || []) {
          let lo = 0, hi = list.length;
          while (lo < hi) { const mid = (lo + hi) >> 1; if (list[mid][0] <= q[0]) lo = mid + 1; else hi = mid; }
          const p = list[lo - 1];
          if (p && p[0] + p[1] >= q[0] + q[1]) add(p[2], 0, -clipped(q, a, b));
        }
      }
      out.set(ty, vals);
    });
    return out;
  }
  function fillRows(table, rowsOut) {
    while (table.rows.length > 1) table.deleteRow(1);
    for (const cells of rowsOut) {
      const tr = table.insertRow();
      for (const c of cells) { const td = tr.insertCell(); td.textContent = c[0]; if (c[1]) td.className = "t"; }
    }
  }
  function rankText(th) { return th.rank === null ? "-" : String(th.rank); }
  function windowTables(a, b) {
    const markRows = [], stateRows = [];
    D.threads.forEach(function (th) {
      const per = threadMarks(th, a, b), summed = [];
      Array.from(per.keys()).sort(function (x, y) { return x - y; }).forEach(function (ty) {
        const t = D.types[ty], title = t ? t.title + " (" + ty + ")" : String(ty);
        const vals = Array.from(per.get(ty).keys()).sort(function (x, y) { return x - y; });
        if (!vals.length) return;
        const row = { k: "m", ty: ty };
        if (t && t.values && !Array.isArray(t.values)) {
          let c = 0, ns = 0;
          for (const v of vals) { const e = per.get(ty).get(v); c += e[0]; ns += e[1]; }
          summed.push([[th.name, 1], [rankText(th)], [title, 1],
            [vals.length + " values, " + vals[0] + " to " + vals[vals.length - 1], 1],
            [String(c)], [humanNs(ns)], [String(ns)]]);
          return;
        }
        for (const v of vals) {
          const e = per.get(ty).get(v), lab = t && t.labels[v] !== undefined ? valueLabel(row, v) + " (" + v + ")" : String(v);
          markRows.push([[th.name, 1], [rankText(th)], [title, 1], [lab, 1], [String(e[0])], [humanNs(e[1])], [String(e[1])]]);
        }
      });
      markRows.push.apply(markRows, summed);
      const st = [0, 0, 0, 0, 0, 0];
      for (const iv of inWindow(rows[th.rows[0]], a, b)) st[iv[2]] += clipped(iv, a, b);
      stateRows.push([[th.name, 1], [rankText(th)]].concat(st.map(function (ns) { return [humanNs(ns)]; })));
    });
    if (markTable) fillRows(markTable, markRows);
    if (stateTable) fillRows(stateTable, stateRows);
  }
  // The checkpoint table of the window: the checkpoints that start in it, each counted once
  // (from the list of every checkpoint the page carries, exact whatever its size limit).
  const ckptTable = document.getElementById("ov-ckpts");
  const ckptRuns = ckptTable ? JSON.parse(document.getElementById("ovniview-checkpoints").textContent) : [];
  const ckptWhole = ckptTable ? Array.prototype.slice.call(ckptTable.rows, 1).map(function (r) { return r.cloneNode(true); }) : [];
  function windowCheckpoints(a, b) {
    const per = new Map();
    for (const r of ckptRuns) {
      if (r[4] < a || r[4] >= b) continue;
      const key = r[0] + "," + r[1] + "," + r[2];
      let e = per.get(key);
      if (!e) { e = [r[0], r[1], r[2], 0, 0, 0]; per.set(key, e); }
      e[3] += 1; e[4] += r[5]; e[5] += r[6];
    }
    const rowsOut = Array.from(per.values()).sort(function (x, y) {
      const n = function (v) { return v === null ? -1 : v; };
      return x[0] - y[0] || n(x[1]) - n(y[1]) || n(x[2]) - n(y[2]);
    }).map(function (e) {
      return [[String(e[0])], [e[1] === null ? "-" : String(e[1])], [e[2] === null ? "-" : "L" + e[2]],
        [String(e[3])], [humanNs(e[4])], [humanNs(e[5])], [String(e[4])], [String(e[5])]];
    });
    fillRows(ckptTable, rowsOut);
  }
  function updateTables() {
    const key = Math.round(v0) + "," + Math.round(v1);
    if (key === tablesFor || !scope) return;
    tablesFor = key;
    const whole = v0 <= 0 && v1 >= DUR;
    if (ckptTable) {
      if (whole) {
        while (ckptTable.rows.length > 1) ckptTable.deleteRow(1);
        for (const r of ckptWhole) ckptTable.tBodies[0].appendChild(r.cloneNode(true));
      } else {
        windowCheckpoints(v0, v1);
      }
    }
    if (whole || !D.complete) {
      [markTable, stateTable].forEach(function (t, i) {
        if (!t) return;
        while (t.rows.length > 1) t.deleteRow(1);
        for (const r of wholeRows[i]) t.tBodies[0].appendChild(r.cloneNode(true));
      });
      scope.textContent = whole ? wholeScope : "The tables below are of the whole trace: this page " +
        "stores its shortest intervals aggregated (its size limit), so the window's times are not known exactly.";
      return;
    }
    windowTables(v0, v1);
    scope.textContent = (afterCheckpoints ? "The checkpoint table above counts the checkpoints that " +
      "start in the window; the phase table is of the whole trace (the mark table below has each " +
      "thread's phases in the window). " : "") +
      "The tables below are of the window shown, " + fmt(v0) + " \u2013 " + fmt(v1) +
      " (" + fmt(v1 - v0) + "): counts are intervals in the window, times their parts in it. Key 0: whole trace.";
  }
  function tablesLater() {
    if (tablesTimer !== null) clearTimeout(tablesTimer);
    tablesTimer = setTimeout(function () { tablesTimer = null; updateTables(); }, 150);
  }

  let drag = null;
  canvas.addEventListener("mousedown", function (e) { drag = { x: e.clientX, a: v0, b: v1, moved: false }; });
  window.addEventListener("mouseup", function (e) {
    if (drag && !drag.moved && e.target === canvas) {
      const h = hit(e);
      if (h) { panel.textContent = events(h) + "\n\n(click to close)"; panel.hidden = false; }
    }
    drag = null;
  });
  window.addEventListener("mousemove", function (e) {
    if (drag) {
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        const d = dx * (drag.b - drag.a) / (cw - LABEL_W);
        setWindow(drag.a - d, drag.b - d);
      }
      tip.hidden = true;
      return;
    }
    if (e.target !== canvas) { tip.hidden = true; return; }
    const h = hit(e);
    if (!h) { tip.hidden = true; return; }
    tip.textContent = describe(h);
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px";
    tip.hidden = false;
  });
  panel.addEventListener("click", function () { panel.hidden = true; });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    const t = v0 + (e.clientX - r.left - LABEL_W) * (v1 - v0) / (cw - LABEL_W);
    zoom(e.deltaY > 0 ? 1.25 : 0.8, Math.min(Math.max(t, v0), v1));
  }, { passive: false });
  window.addEventListener("keydown", function (e) {
    if (e.target && /INPUT|TEXTAREA|SELECT/.test(e.target.tagName)) return;
    const w = v1 - v0;
    if (e.key === "+" || e.key === "=") zoom(0.5);
    else if (e.key === "-" || e.key === "_") zoom(2);
    else if (e.key === "ArrowLeft") setWindow(v0 - w * 0.2, v1 - w * 0.2);
    else if (e.key === "ArrowRight") setWindow(v0 + w * 0.2, v1 + w * 0.2);
    else if (e.key === "0" || e.key === "Home") setWindow(0, DUR);
    else if (e.key === "c") toggleCpu();
    else if (e.key === "Escape") panel.hidden = true;
    else return;
    e.preventDefault();
  });
  document.getElementById("ov-in").addEventListener("click", function () { zoom(0.5); });
  document.getElementById("ov-out").addEventListener("click", function () { zoom(2); });
  document.getElementById("ov-reset").addEventListener("click", function () { setWindow(0, DUR); });
  document.getElementById("ov-cpu").addEventListener("click", toggleCpu);
  window.addEventListener("hashchange", function () { readHash(); draw(); });
  window.addEventListener("resize", function () { layout(); draw(); });

  if (!HAS_CPUS) {
    document.getElementById("ov-cpu").disabled = true;
    document.getElementById("ov-cpu-note").hidden = false;
  }
  layout();
  readHash();
  draw();
  updateTables();
  document.getElementById("ovniview-render").dataset.ms = performance.now().toFixed(1);
})();
