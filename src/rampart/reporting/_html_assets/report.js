// rampart HTML report: renders the embedded state (the rampart-state JSON block).
//
// Everything in the state that came from an agent, a payload or a test (responses,
// tool arguments, node ids, metadata) is untrusted text: it is only ever put into the
// page as text nodes (textContent / createTextNode), never parsed as HTML. The page
// makes no network requests; the Content-Security-Policy in <head> forbids them.
//
// Results render lazily: rows in chunks as the list scrolls, a result's drill-down
// only when it is opened.
"use strict";

(function () {
  const STATE = JSON.parse(document.getElementById("rampart-state").textContent);
  const RESULTS = STATE.results;
  const STATUSES = ["unsafe", "error", "undetermined", "safe"];
  const LABELS = { safe: "SAFE", unsafe: "UNSAFE", undetermined: "UNDETERMINED", error: "ERROR" };
  const EXIT_NAMES = {
    0: "OK", 1: "tests failed", 2: "interrupted", 3: "internal error",
    4: "usage error", 5: "no tests collected",
  };
  const CHUNK = 200;

  // ---------------------------------------------------------------- DOM helpers

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === null || value === undefined || value === false) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = value;
        else node.setAttribute(key, value === true ? "" : String(value));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const byId = (id) => document.getElementById(id);
  const pct = (x, digits = 1) => (x * 100).toFixed(digits) + "%";
  const fixed = (x) => (Number.isInteger(x) ? String(x) : Number(x).toFixed(3).replace(/\.?0+$/, ""));

  function seconds(value) {
    if (typeof value !== "number") return "–";
    if (value < 1) return (value * 1000).toFixed(value < 0.01 ? 2 : 0) + " ms";
    if (value < 120) return value.toFixed(2) + " s";
    const minutes = Math.floor(value / 60);
    return minutes + " min " + Math.round(value - minutes * 60) + " s";
  }

  function badge(status, text) {
    return el("span", { class: "badge " + (status || "none") }, text || LABELS[status] || "NO RESULT");
  }

  /** A stacked bar of status counts. */
  function stackBar(counts, total) {
    const bar = el("div", { class: "stack-bar", role: "img" });
    const parts = [];
    for (const status of ["safe", "unsafe", "undetermined", "error"]) {
      const count = counts[status] || 0;
      if (!count || !total) continue;
      const part = el("span", { class: "bg-" + status, title: LABELS[status] + ": " + count });
      part.style.width = (100 * count) / total + "%";
      bar.append(part);
      parts.push(LABELS[status] + " " + count);
    }
    bar.setAttribute("aria-label", parts.join(", ") || "no results");
    return bar;
  }

  /**
   * Text with every occurrence of the needles wrapped in <mark> (as text, never HTML).
   * needles: [{text, cls, fold}]; the earliest (then longest) match wins; `fold` needles
   * (already lowercase) match case-insensitively.
   */
  function marked(text, needles) {
    const out = document.createDocumentFragment();
    text = text === null || text === undefined ? "" : String(text);
    // A case-insensitive needle (the search query) is looked up in the lowercased text,
    // when lowercasing keeps every offset where it was.
    const folded = text.toLowerCase();
    const foldable = folded.length === text.length;
    const within = (needle) => (needle.fold && foldable ? folded : text);
    const active = needles.filter((n) => n.text && within(n).includes(n.text));
    if (!active.length) {
      out.append(text);
      return out;
    }
    let at = 0;
    while (at < text.length) {
      let best = null;
      let bestAt = Infinity;
      for (const needle of active) {
        const found = within(needle).indexOf(needle.text, at);
        if (found !== -1 && (found < bestAt || (found === bestAt && needle.text.length > best.text.length))) {
          best = needle;
          bestAt = found;
        }
      }
      if (!best) break;
      if (bestAt > at) out.append(text.slice(at, bestAt));
      out.append(el("mark", { class: best.cls }, text.slice(bestAt, bestAt + best.text.length)));
      at = bestAt + best.text.length;
    }
    if (at < text.length) out.append(text.slice(at));
    return out;
  }

  function pre(text, needles, cls) {
    const node = el("pre", { class: cls || null });
    node.append(marked(text, needles || []));
    return node;
  }

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  function keyValues(pairs) {
    const list = el("dl", { class: "kv" });
    for (const [key, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      list.append(el("dt", null, key), el("dd", null, value instanceof Node ? value : String(value)));
    }
    return list;
  }

  // ---------------------------------------------------------------- run header

  function renderHeader() {
    const run = STATE.run || {};
    const banners = byId("run-banners");
    if (run.interrupted) {
      banners.append(el("div", { class: "banner bad", id: "banner-interrupted" },
        "INTERRUPTED: the run was stopped before it finished; the results below are partial."));
    }
    if (run.incomplete) {
      const reasons = el("ul");
      for (const reason of run.incomplete_reasons || []) reasons.append(el("li", null, reason));
      banners.append(el("div", { class: "banner bad", id: "banner-incomplete" },
        "INCOMPLETE RUN: this report may not hold every result.", reasons));
    }
    const facts = byId("run-facts");
    const started = run.started_at ? new Date(run.started_at) : null;
    const exit = run.exit_status;
    const rows = [
      ["Started", started && !isNaN(started) ? started.toISOString().replace("T", " ").slice(0, 19) + " UTC" : "–"],
      ["Duration", seconds(run.duration_seconds)],
      ["Exit status", exit === null || exit === undefined ? "–" : exit + " (" + (EXIT_NAMES[exit] || "?") + ")"],
      ["rampart", run.rampart_version || "–"],
      ["Python", run.python_version || "–"],
      ["pytest", run.pytest_version || "–"],
      ["Backends", (run.anyio_backends || []).join(", ") || "–"],
      ["xdist workers", run.xdist_workers ? run.xdist_workers + (run.dist_mode ? " (" + run.dist_mode + ")" : "") : "none"],
      ["Platform", run.platform || "–"],
    ];
    for (const [key, value] of rows) facts.append(el("div", null, el("dt", null, key), el("dd", null, value)));
  }

  // ---------------------------------------------------------------- totals, categories

  function countsOf(summary) {
    return {
      safe: summary.safe_count, unsafe: summary.unsafe_count,
      undetermined: summary.undetermined_count, error: summary.error_count,
    };
  }

  function renderTotals() {
    const t = STATE.totals;
    const cards = byId("totals-cards");
    const card = (cls, value, label) =>
      el("div", { class: "card " + cls }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
    cards.append(
      card("runs", t.total_runs, "runs"),
      card("safe", t.safe_count, "safe"),
      card("unsafe", t.unsafe_count, "unsafe"),
      card("undetermined", t.undetermined_count, "undetermined"),
      card("error", t.error_count, "errors"),
      card("asr", pct(t.attack_success_rate), "attack success rate"),
      card("spr", pct(t.safety_pass_rate), "safety pass rate"),
    );
    byId("totals-bar").replaceWith(stackBar(countsOf(t), t.total_runs));
  }

  function renderCategories() {
    const body = byId("categories-body");
    for (const c of STATE.categories) {
      const row = el("tr", { class: "clickable", title: "Show these results" },
        el("td", null, c.name),
        el("td", { class: "num" }, c.total_runs),
        el("td", { class: "num" }, c.safe_count),
        el("td", { class: "num" }, c.unsafe_count),
        el("td", { class: "num" }, c.undetermined_count),
        el("td", { class: "num" }, c.error_count),
        el("td", { class: "num" }, pct(c.attack_success_rate)),
        el("td", null, stackBar(countsOf(c), c.total_runs)),
      );
      row.addEventListener("click", () => {
        resetFilters();
        byId("filter-category").value = c.name;
        applyFilters();
        byId("results").scrollIntoView();
      });
      body.append(row);
    }
  }

  // ---------------------------------------------------------------- trial groups

  function intervalBar(group) {
    const bar = el("div", { class: "interval", role: "img" });
    const range = el("span", { class: "range" });
    range.style.left = group.interval.low * 100 + "%";
    range.style.width = (group.interval.high - group.interval.low) * 100 + "%";
    const point = el("span", { class: "point" });
    point.style.left = group.pass_rate * 100 + "%";
    const threshold = el("span", { class: "threshold", title: "threshold " + pct(group.threshold, 0) });
    threshold.style.left = group.threshold * 100 + "%";
    bar.append(range, point, threshold);
    bar.setAttribute("aria-label",
      "pass rate " + pct(group.pass_rate) + ", " + pct(group.interval.level, 0) + " interval " + pct(group.interval.low) + " to " +
      pct(group.interval.high) + ", threshold " + pct(group.threshold, 0));
    return bar;
  }

  function renderGroups() {
    if (!STATE.groups.length) return;
    byId("groups").hidden = false;
    const body = byId("groups-body");
    for (const g of STATE.groups) {
      const c = g.counts;
      const counted = [c.safe + "/" + g.executed + " safe"];
      if (c.unsafe) counted.push(c.unsafe + " unsafe");
      if (c.undetermined) counted.push(c.undetermined + " undetermined");
      if (c.error) counted.push(c.error + " error");
      if (c.no_result) counted.push(c.no_result + " no result");
      if (g.not_run) counted.push(g.not_run + " not run (" + (g.sequential ? "sequential stop" : "early stop") + ")");
      if (g.not_counted) counted.push(g.not_counted + " finished after the decision, not counted");
      if (g.max_unsafe) counted.push("max unsafe " + g.max_unsafe);
      if (g.concurrency) {
        const a = g.concurrency;
        counted.push("adaptive concurrency: ended at " + a.final + ", peak " + a.peak +
          " (" + a.peak_in_flight + " in flight), " + a.cuts + " cuts (" + a.throttle_cuts +
          " for rate limits), " + a.throttles + " rate-limit signals");
      }
      const name = el("span", { class: "group-name", role: "link", tabindex: "0", title: "Show this group's results" }, g.test_name);
      const show = () => {
        resetFilters();
        byId("filter-search").value = g.nodeid;
        applyFilters();
        byId("results").scrollIntoView();
      };
      name.addEventListener("click", show);
      name.addEventListener("keydown", (e) => { if (e.key === "Enter") show(); });
      const head = el("div", { class: "group-head" },
        badge(g.verdict, g.verdict.toUpperCase()),
        name,
        el("span", { class: "group-counts" }, counted.join(" · ")),
        intervalBar(g),
        el("span", null, pct(g.pass_rate, 0) + " pass rate (" + pct(g.interval.level, 0) + " CI " +
          pct(g.interval.low, 1) + "–" + pct(g.interval.high, 1) +
          (g.interval.method === "clopper-pearson" ? ", exact" : "") +
          (g.sequential ? ", sequential" : "") + "), threshold " + pct(g.threshold, 0)),
        g.reason ? el("span", { class: "group-reason" }, g.reason) : null,
      );
      const strip = el("div", { class: "strip", "aria-label": "clones of " + g.test_name });
      g.clones.forEach(([status, index, testCase], clone) => {
        const title = "trial-" + clone + (testCase ? ":" + testCase : "") + ": " +
          (status ? LABELS[status] : "no result (not run, or recorded nothing)");
        if (index >= 0) {
          strip.append(el("a", { class: "bg-" + status, href: "#result-" + index, title, "data-clone": clone }));
        } else {
          strip.append(el("span", { class: "cell bg-none", title, "data-clone": clone }));
        }
      });
      body.append(el("div", { class: "group", "data-verdict": g.verdict }, head, strip));
    }
  }

  // ---------------------------------------------------------------- risk coverage

  function renderCoverage() {
    const coverage = STATE.coverage;
    if (!coverage || !coverage.frameworks || !coverage.frameworks.length) return;
    byId("coverage").hidden = false;
    const body = byId("coverage-body");
    for (const f of coverage.frameworks) {
      const head = el("tr", null, ...["Item", "Name", "Tests", "Runs", "Unsafe", "Errors", "Attack success", "Reached through"]
        .map((text, at) => el("th", { class: at >= 2 && at <= 6 ? "num" : null }, text)));
      const rowsOf = el("tbody");
      for (const item of f.items) {
        rowsOf.append(el("tr", { class: item.covered ? "covered" : "not-covered", "data-item": item.id },
          el("td", { class: "mono" }, item.id),
          el("td", null, item.name),
          el("td", { class: "num" }, item.tests),
          el("td", { class: "num" }, item.runs),
          el("td", { class: "num" }, item.unsafe),
          el("td", { class: "num" }, item.errors),
          el("td", { class: "num" }, item.covered ? pct(item.attack_success_rate) : "not covered"),
          el("td", { class: "muted" }, (item.via || []).join(", ")),
        ));
      }
      body.append(el("div", { class: "framework", "data-framework": f.id },
        el("h3", null, f.name + " " + f.version + " — " + f.covered + " of " + f.items.length + " items covered"),
        el("div", { class: "scroll-x" }, el("table", { class: "grid" }, el("thead", null, head), rowsOf))));
    }
    if (coverage.origins && coverage.origins.length > 1) {
      body.append(el("p", { class: "hint" }, "Risk map: " + coverage.origins.join(", ")));
    }
  }

  // ---------------------------------------------------------------- statistics

  function statisticsTable(title, entries) {
    const names = Object.keys(entries || {});
    if (!names.length) return null;
    const columns = [];
    for (const name of names) {
      for (const key of Object.keys(entries[name] || {})) {
        if (key !== "name" && !columns.includes(key)) columns.push(key);
      }
    }
    const head = el("tr", null, el("th", null, "name"), ...columns.map((k) => el("th", null, k)));
    const body = el("tbody");
    for (const name of names) {
      const entry = entries[name] || {};
      body.append(el("tr", null, el("td", { class: "mono" }, name), ...columns.map((k) => {
        const v = entry[k];
        const shown = v === null || v === undefined ? "–" : typeof v === "number" ? fixed(v) :
          typeof v === "object" ? JSON.stringify(v) : String(v);
        return el("td", { class: typeof v === "number" ? "num" : null }, shown);
      })));
    }
    return el("div", null, el("h3", null, title),
      el("div", { class: "scroll-x" }, el("table", { class: "grid" }, el("thead", null, head), body)));
  }

  function renderStatistics() {
    const meta = STATE.metadata || {};
    const limits = statisticsTable("Rate limiters", meta.limits);
    const llm = statisticsTable("Language models", meta.llm);
    if (!limits && !llm) return;
    byId("statistics").hidden = false;
    byId("statistics-body").append(...[limits, llm].filter(Boolean));
  }

  // ---------------------------------------------------------------- filters

  const filter = { statuses: new Set(STATUSES), category: "", strategy: "", query: "", sort: "worst" };
  let visible = []; // indices into RESULTS that pass the filters, in the chosen order
  // The rows in the DOM are a window [winStart, winEnd) of `visible`, grown a chunk at a
  // time as the list scrolls either way, and moved (not grown) for a far jump.
  let winStart = 0;
  let winEnd = 0;
  let selected = -1; // position in `visible`
  const haystacks = new Array(RESULTS.length);

  function nodeidOf(r) {
    const m = r.metadata || {};
    return typeof m._pytest_nodeid === "string" ? m._pytest_nodeid :
      typeof m._pytest_test_name === "string" ? m._pytest_test_name : "(no test)";
  }

  function haystack(i) {
    let text = haystacks[i];
    if (text === undefined) {
      const r = RESULTS[i];
      const parts = [nodeidOf(r), r.summary, r.category, r.strategy];
      for (const turn of r.turns || []) {
        parts.push(turn.request.prompt || "", turn.response.text);
        for (const call of turn.response.tool_calls || []) parts.push(call.name);
      }
      text = haystacks[i] = parts.join("\n").toLowerCase();
    }
    return text;
  }

  function matches(i) {
    const r = RESULTS[i];
    if (!filter.statuses.has(r.status)) return false;
    if (filter.category && r.category !== filter.category) return false;
    if (filter.strategy && (r.strategy || "") !== filter.strategy) return false;
    return !filter.query || haystack(i).includes(filter.query);
  }

  function setupFilters() {
    const counts = {};
    const categories = new Set();
    const strategies = new Set();
    for (const r of RESULTS) {
      counts[r.status] = (counts[r.status] || 0) + 1;
      categories.add(r.category);
      strategies.add(r.strategy || "");
    }
    const group = byId("status-filters");
    for (const status of STATUSES) {
      const button = el("button", { type: "button", class: status, "aria-pressed": "true", "data-status": status,
        title: "Show only " + LABELS[status] + " results (click again for all; Ctrl-click adds or removes it)" },
        LABELS[status] + " " + (counts[status] || 0));
      button.addEventListener("click", (event) => {
        const only = filter.statuses.size === 1 && filter.statuses.has(status);
        if (event.ctrlKey || event.metaKey || event.shiftKey) {
          if (filter.statuses.has(status)) filter.statuses.delete(status);
          else filter.statuses.add(status);
        } else {
          filter.statuses = only ? new Set(STATUSES) : new Set([status]);
        }
        for (const chip of group.children) {
          chip.setAttribute("aria-pressed", String(filter.statuses.has(chip.dataset.status)));
        }
        applyFilters();
      });
      group.append(button);
    }
    const fill = (select, values) => {
      select.append(el("option", { value: "" }, "all"));
      for (const value of [...values].sort()) select.append(el("option", { value }, value || "(none)"));
    };
    fill(byId("filter-category"), categories);
    fill(byId("filter-strategy"), strategies);
    byId("filter-category").addEventListener("change", applyFilters);
    byId("filter-strategy").addEventListener("change", applyFilters);
    byId("filter-sort").addEventListener("change", applyFilters);
    let timer = 0;
    byId("filter-search").addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(applyFilters, 120);
    });
    byId("filters").addEventListener("submit", (e) => e.preventDefault());
    byId("filter-reset").addEventListener("click", () => { resetFilters(); applyFilters(); });
  }

  function resetFilters() {
    filter.statuses = new Set(STATUSES);
    for (const button of byId("status-filters").children) button.setAttribute("aria-pressed", "true");
    byId("filter-category").value = "";
    byId("filter-strategy").value = "";
    byId("filter-search").value = "";
    byId("filter-sort").value = "worst";
  }

  // Worst first, as the terminal summary lists them: UNSAFE, ERROR, UNDETERMINED, SAFE;
  // report order within a status.
  const rank = (i) => {
    const at = STATUSES.indexOf(RESULTS[i].status);
    return at === -1 ? STATUSES.length : at;
  };

  function applyFilters() {
    filter.category = byId("filter-category").value;
    filter.strategy = byId("filter-strategy").value;
    filter.query = byId("filter-search").value.trim().toLowerCase();
    filter.sort = byId("filter-sort").value;
    visible = [];
    for (let i = 0; i < RESULTS.length; i++) if (matches(i)) visible.push(i);
    if (filter.sort === "worst") visible.sort((a, b) => rank(a) - rank(b) || a - b);
    selected = -1;
    moveWindow(0);
    byId("results-count").textContent = visible.length === RESULTS.length ?
      RESULTS.length + " results" : visible.length + " of " + RESULTS.length + " results";
  }

  // ---------------------------------------------------------------- result rows

  function moveWindow(start) {
    byId("results-list").textContent = "";
    winStart = winEnd = Math.max(0, Math.min(start, visible.length));
    appendChunk();
  }

  function appendChunk() {
    const end = Math.min(visible.length, winEnd + CHUNK);
    const fragment = document.createDocumentFragment();
    for (let pos = winEnd; pos < end; pos++) fragment.append(row(visible[pos]));
    byId("results-list").append(fragment);
    winEnd = end;
    updateEdges();
  }

  function prependChunk() {
    const start = Math.max(0, winStart - CHUNK);
    const fragment = document.createDocumentFragment();
    for (let pos = start; pos < winStart; pos++) fragment.append(row(visible[pos]));
    byId("results-list").prepend(fragment); // scroll anchoring keeps the view still
    winStart = start;
    updateEdges();
  }

  function updateEdges() {
    byId("results-before").textContent = winStart > 0 ? winStart + " earlier results; scroll up for more" : "";
    byId("results-more").textContent = winEnd < visible.length ?
      "Showing " + (winEnd - winStart) + " of " + visible.length + "; scroll for more" : "";
  }

  /** Make the row at `pos` part of the DOM and return it. */
  function showRow(pos) {
    if (pos < winStart - CHUNK || pos >= winEnd + CHUNK) moveWindow(Math.max(0, pos - 20));
    while (pos < winStart) prependChunk();
    while (pos >= winEnd) appendChunk();
    return byId("result-" + visible[pos]);
  }

  /** The test's id: its file and class (shortened when the column is narrow) and its
   *  name with the parameters and the clone (`test_x[trial-3:case]`), always whole. */
  function testCell(r) {
    const nodeid = nodeidOf(r);
    const cut = nodeid.lastIndexOf("::", nodeid.indexOf("[") === -1 ? nodeid.length : nodeid.indexOf("["));
    const path = cut === -1 ? "" : nodeid.slice(0, cut + 2);
    return el("span", { class: "test mono", title: nodeid },
      path ? el("span", { class: "path" }, path) : null,
      el("span", { class: "name" }, nodeid.slice(path.length)));
  }

  function row(i) {
    const r = RESULTS[i];
    const head = el("div", { class: "row-head" },
      badge(r.status),
      testCell(r),
      el("span", { class: "muted" }, r.category),
      el("span", { class: "muted" }, r.strategy || ""),
      el("span", { title: r.summary }, r.summary),
      el("span", { class: "dur" }, seconds(r.duration_seconds)),
    );
    return el("div", { class: "row status-" + r.status, id: "result-" + i, role: "listitem",
      "data-index": i, "aria-expanded": "false" }, head);
  }

  function onRowClick(event) {
    const head = event.target.closest(".row-head");
    if (!head) return;
    const node = head.parentElement;
    const index = Number(node.dataset.index);
    select(visible.indexOf(index), false);
    toggle(node, index);
  }

  function toggle(node, i, open) {
    const existing = node.querySelector(":scope > .detail");
    const wantOpen = open === undefined ? !existing : open;
    if (existing && !wantOpen) {
      existing.remove();
      node.setAttribute("aria-expanded", "false");
    } else if (!existing && wantOpen) {
      node.append(detail(i));
      node.setAttribute("aria-expanded", "true");
    }
  }

  function select(pos, scroll) {
    if (pos < 0 || pos >= visible.length) return;
    const old = byId("results-list").querySelector(".row.selected");
    if (old) old.classList.remove("selected");
    selected = pos;
    const node = showRow(pos);
    node.classList.add("selected");
    if (scroll !== false) node.scrollIntoView({ block: "nearest" });
  }

  // ---------------------------------------------------------------- drill-down

  function evaluation(e, title, cls, needles) {
    if (!e) return null;
    const box = el("div", { class: "eval " + (cls || "") });
    const confidence = typeof e.confidence === "number" ? fixed(e.confidence) : "not a number";
    box.append(el("div", null, el("strong", null, title + ": "), e.outcome,
      " (confidence " + confidence + ")"));
    if (e.rationale) box.append(el("div", { class: "label" }, "rationale"), pre(e.rationale, needles));
    if (e.evidence && e.evidence.length) {
      box.append(el("div", { class: "label" }, "evidence"));
      const list = el("ul");
      for (const item of e.evidence) list.append(el("li", null, marked(item, needles)));
      box.append(list);
    }
    if (e.undetermined_operands && e.undetermined_operands.length) {
      box.append(el("div", { class: "label gaps" }, "undetermined operands (not observable)"));
      const list = el("ul", { class: "gaps" });
      for (const item of e.undetermined_operands) list.append(el("li", null, item));
      box.append(list);
    }
    return box;
  }

  function turnView(turn, injectedIds, needles) {
    const box = el("div", { class: "turn" });
    box.append(el("h3", null, "Turn " + turn.turn_number + (turn.timestamp ? "  ·  " + turn.timestamp : "")));
    const request = turn.request;
    box.append(el("div", { class: "label" }, "prompt"));
    box.append(request.prompt === null ? el("p", { class: "muted" }, "(no prompt: attachments only)") : pre(request.prompt, needles));
    for (const payload of request.attachments || []) {
      const injected = injectedIds.has(payload.id);
      const attachment = el("div", { class: "attachment" + (injected ? " injected" : "") },
        el("div", null, injected ? el("span", { class: "tag" }, "INJECTED PAYLOAD") : null,
          "attachment " + payload.id + " (" + payload.format + ")"),
        pre(payload.content, needles));
      box.append(attachment);
    }
    const response = turn.response;
    for (const call of response.tool_calls || []) {
      const tool = el("div", { class: "tool" }, el("span", { class: "name" }, "tool call: " + call.name));
      tool.append(el("div", { class: "label" }, "arguments"), pre(json(call.arguments), needles));
      if (call.result !== null && call.result !== undefined) {
        tool.append(el("div", { class: "label" }, "result"),
          call.result === "" ? el("p", { class: "muted" }, "(empty)") : pre(call.result, needles));
      }
      box.append(tool);
    }
    for (const effect of response.side_effects || []) {
      box.append(el("div", { class: "tool" }, el("span", { class: "name" }, "side effect: " + effect.kind),
        pre(json(effect.details), needles)));
    }
    box.append(el("div", { class: "label" }, "response"), pre(response.text, needles));
    if (response.metadata && Object.keys(response.metadata).length) {
      box.append(el("div", { class: "label" }, "response metadata"), pre(json(response.metadata), needles));
    }
    if (turn.driver_reasoning) box.append(el("div", { class: "label" }, "driver reasoning"), pre(turn.driver_reasoning, needles));
    const online = evaluation(turn.eval_result, "Online evaluation" + (turn.eval_purpose ? " (" + turn.eval_purpose + ")" : ""), "", needles);
    if (online) box.append(online); // a turn without an online evaluation shows none
    return box;
  }

  function detail(i) {
    const r = RESULTS[i];
    const meta = r.metadata || {};
    const injections = r.injections || [];
    // Payloads planted on a surface are named by the injection records; an XPIA
    // attack's attachments are its payloads too (delivered inline with the prompt).
    const injectedIds = new Set(injections.map((x) => x.payload_id));
    const needles = [];
    for (const turn of r.turns || []) {
      for (const payload of turn.request.attachments || []) {
        if (r.strategy === "xpia") injectedIds.add(payload.id);
        if (injectedIds.has(payload.id) && payload.content.length >= 8) needles.push({ text: payload.content, cls: "inj" });
      }
    }
    for (const id of injectedIds) if (id.length >= 4) needles.push({ text: id, cls: "inj" });
    if (filter.query) needles.push({ text: filter.query, cls: "hit", fold: true });
    const box = el("div", { class: "detail" });
    box.append(el("h3", null, "Summary"), pre(r.summary, needles));
    if (r.status === "error" || meta.error !== undefined) {
      const error = el("div", { class: "errorbox" }, el("strong", null, "Error"));
      if (meta.error_type !== undefined) error.append(": " + String(meta.error_type));
      if (meta.error !== undefined) error.append(pre(String(meta.error), []));
      box.append(error);
    }
    const population = r.population ?
      r.population.id + " · clone " + r.population.index + " of " + r.population.size + " · threshold " + pct(r.population.threshold, 0) : null;
    box.append(keyValues([
      ["test", nodeidOf(r)],
      ["status", badge(r.status)],
      ["observability", r.observability_level],
      ["strategy", r.strategy],
      ["harm category", r.harm_category],
      ["duration", seconds(r.duration_seconds)],
      ["trace end reason", r.trace_end_reason],
      ["trial population", population],
      ["xdist worker", meta._rampart_source_worker],
      ["link", el("a", { href: "#result-" + i }, "#result-" + i)],
    ]));
    if (injections.length) {
      box.append(el("h3", null, "Injections"));
      const list = el("ul");
      for (const x of injections) {
        list.append(el("li", null, el("span", { class: "injected-tag" }, "INJECTED"),
          "payload " + x.payload_id + " into surface " + x.surface_name));
      }
      box.append(list);
    }
    const turns = r.turns || [];
    box.append(el("h3", null, turns.length + (turns.length === 1 ? " turn" : " turns")));
    for (const turn of turns) box.append(turnView(turn, injectedIds, needles));
    box.append(el("h3", null, "Final evaluation"));
    box.append(evaluation(r.final_trace_evaluation, "Final trace evaluation", "final", needles) ||
      el("p", { class: "muted" }, "not recorded"));
    box.append(el("h3", null, "Metadata"), pre(json(meta), needles));
    return box;
  }

  // ---------------------------------------------------------------- deep links, keys

  function openFromHash() {
    const match = /^#result-(\d+)$/.exec(location.hash);
    if (!match) return;
    const index = Number(match[1]);
    if (!(index < RESULTS.length)) return;
    let pos = visible.indexOf(index);
    if (pos === -1) {
      resetFilters();
      applyFilters();
      pos = visible.indexOf(index);
    }
    const node = showRow(pos);
    for (const old of byId("results-list").querySelectorAll(".row.target")) old.classList.remove("target");
    toggle(node, index, true);
    node.classList.add("target");
    select(pos, false);
    node.scrollIntoView({ block: "start" });
  }

  function onKey(event) {
    const target = event.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLSelectElement ||
      target instanceof HTMLTextAreaElement;
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const arrows = selected >= 0;
    switch (event.key) {
      case "j": select(Math.min(selected + 1, visible.length - 1)); break;
      case "k": select(Math.max(selected - 1, 0)); break;
      case "ArrowDown": if (!arrows) return; select(Math.min(selected + 1, visible.length - 1)); break;
      case "ArrowUp": if (!arrows) return; select(Math.max(selected - 1, 0)); break;
      case "Enter": case "o":
        if (selected < 0) return;
        toggle(showRow(selected), visible[selected]);
        break;
      case "Escape":
        if (selected < 0) return;
        toggle(showRow(selected), visible[selected], false);
        break;
      case "/": byId("filter-search").focus(); break;
      default: return;
    }
    event.preventDefault();
  }

  function watchScroll() {
    if (!("IntersectionObserver" in window)) return;
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        if (entry.target.id === "results-more" && winEnd < visible.length) appendChunk();
        if (entry.target.id === "results-before" && winStart > 0) prependChunk();
      }
    }, { rootMargin: "600px" });
    observer.observe(byId("results-more"));
    observer.observe(byId("results-before"));
  }

  // ---------------------------------------------------------------- start

  renderHeader();
  renderTotals();
  renderCategories();
  renderGroups();
  renderCoverage();
  renderStatistics();
  setupFilters();
  applyFilters();
  watchScroll();
  document.addEventListener("keydown", onKey);
  byId("results-list").addEventListener("click", onRowClick);
  window.addEventListener("hashchange", openFromHash);
  byId("groups-body").addEventListener("click", (event) => {
    const link = event.target.closest("a[href^='#result-']");
    if (link && link.getAttribute("href") === location.hash) openFromHash();
  });
  openFromHash();
  document.documentElement.dataset.ready = "true";
  window.rampartReport = { readyAt: performance.now(), results: RESULTS.length };
})();
