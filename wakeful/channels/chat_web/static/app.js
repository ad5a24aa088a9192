// wakeful's web page: chat, live timeline, tasks, approvals, session trust and
// trajectory over one SSE connection.
// Durable records (event log, outbox, trajectory, model calls) are the truth; the feed
// says when to read more of them, and carries what is only live (reply deltas, tool
// activity). Every entry has a key, so reading a record twice never shows it twice.
"use strict";

const $ = (id) => document.getElementById(id);
const seg = encodeURIComponent;
const LONG = 300; // characters: longer tool arguments and results are collapsed
const PLACEHOLDER = "[placeholder]";
const MAX_ENTRIES = 1000;
const FEED_TYPES = ["event", "delta", "reply", "run", "tool", "task", "alert", "discarded", "resync", "pairing", "approval"];

const state = {
  session: localStorage.getItem("wakeful.session") || "main",
  csrf: null,
  busy: false,
  lastSeq: 0,
  keys: new Set(), // timeline and chat entries already shown
  tools: new Map(), // call id -> timeline element
  lateResults: new Map(), // call id -> event seq that paid its placeholder
  streaming: null, // the assistant bubble being streamed
  streamed: "", // its text so far, Markdown re-rendered as it grows
  streamDue: false, // a render of it is asked for
  streamPause: 0, // ms to wait before the next render: four times the last one took
  unread: new Map(), // outbox id -> bubble
  ready: null, // a promise: the current session's records are loaded
  taskPoll: null,
  otherUnread: new Set(),
  sessions: new Set(), // every session name the page has seen
  approvalsSeen: null, // approval ids already shown (null until the first read: nothing is "new" then)
  countdown: null, // ticks the approvals' "denied at" countdowns while any is shown
};

// --- HTTP ------------------------------------------------------------------------

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && state.csrf) headers["X-CSRF-Token"] = state.csrf;
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) {
    location.replace("/");
    throw new Error("logged out");
  }
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json() : {};
  if (!response.ok) {
    const error = new Error(data.error || `${response.status} ${response.statusText}`);
    error.status = response.status;
    throw error;
  }
  return data;
}

const sessionPath = (rest) => `/api/sessions/${seg(state.session)}/${rest}`;

// --- small DOM helpers -------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function clock(seconds) {
  const date = seconds ? new Date(seconds * 1000) : new Date();
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function longText(label, text) {
  text = text ?? "";
  if (text.length <= LONG) return el("div", {}, el("span", { class: "reason", text: `${label}: ` }), el("code", { text }));
  return el("details", {}, el("summary", { text: `${label} (${text.length} characters)` }), el("pre", { text }));
}

// The box that scrolls a list: the list itself (#messages), a panel around it (the
// timeline scrolls with its <aside>), or the page (a phone's one column).
function scroller(node) {
  for (let box = node; box && box !== document.body; box = box.parentElement) {
    const overflow = getComputedStyle(box).overflowY;
    if (overflow === "auto" || overflow === "scroll") return box;
  }
  return document.scrollingElement;
}

// Add to a list and keep its newest entry in view, if the reader was at the bottom;
// one who scrolled up to read stays where they are.
function follow(list, add) {
  const box = scroller(list);
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  add();
  if (atBottom) box.scrollTop = box.scrollHeight;
}

// --- chat ------------------------------------------------------------------------

function addBubble(key, role, text, at, extra = {}) {
  if (key && state.keys.has(key)) return null;
  if (key) state.keys.add(key);
  const list = $("messages");
  list.querySelector(".empty-chat")?.remove();
  const meta = el("span", { class: "meta", text: `${role === "user" ? "you" : "wakeful"} · ${clock(at)}` });
  // The owner's words are shown as typed; the model's replies are Markdown.
  const body = role === "user" ? el("div", { class: "body", text }) : el("div", { class: "body md" });
  if (role !== "user") renderMarkdown(text, body);
  const bubble = el("li", { class: `msg ${role}`, "data-key": key || "", "data-at": at }, meta, body);
  if (extra.unread) markUnread(bubble, extra.id);
  // In time order: a resumed feed may bring a reply before the message it answers is read.
  const later = [...list.children].find((other) => Number(other.dataset.at) > at);
  follow(list, () => list.insertBefore(bubble, later || null));
  return bubble;
}

function markUnread(bubble, id) {
  bubble.classList.add("unread");
  bubble.querySelector(".meta").append(el("span", { class: "badge", text: "new" }));
  state.unread.set(id, bubble);
  acknowledgeSeen();
}

function streamDelta(text, at) {
  if (!state.streaming) {
    state.streaming = addBubble(null, "assistant", "", at);
    state.streaming.classList.add("streaming");
    state.streaming.setAttribute("aria-busy", "true");
    state.streamed = "";
    state.streamPause = 0;
  }
  state.streamed += text;
  if (state.streamDue) return;
  // The whole text is rendered again (an unclosed ** or ``` changes what came before), at
  // most once a frame, and then not before four times as long as that took: a long reply
  // (bench/web_markdown.py: ~40 ms a render at 20 KB) keeps growing on the screen without
  // keeping a phone busy more than a fifth of the time.
  state.streamDue = true;
  setTimeout(() => requestAnimationFrame(renderStreamed), state.streamPause);
}

function renderStreamed() {
  state.streamDue = false;
  const bubble = state.streaming;
  if (!bubble) return;
  const started = performance.now();
  follow($("messages"), () => setMarkdown(bubble, state.streamed));
  state.streamPause = 4 * (performance.now() - started);
}

function setMarkdown(bubble, text) {
  renderMarkdown(text, bubble.querySelector(".body"));
}

// A streamed reply that was not finished (Stop, a failed call) stays where it was read,
// marked as not kept: the model never sees it as said, and the reader is told so.
function retractStreaming(cause) {
  const bubble = state.streaming;
  if (!bubble) return;
  renderStreamed(); // what was read so far, including chunks still waiting to be drawn
  state.streaming = null;
  bubble.classList.replace("streaming", "discarded");
  bubble.removeAttribute("aria-busy");
  bubble.querySelector(".meta").append(el("span", { class: "badge", text: "stopped" }));
  const why = `Not kept (${cause}): this unfinished reply is not part of the conversation.`;
  follow($("messages"), () => bubble.append(el("span", { class: "why", text: why })));
}

function showReply(message) {
  const key = `o:${message.id}`;
  if (state.keys.has(key)) return;
  const unread = message.acked_at === null || message.acked_at === undefined;
  if (state.streaming) {
    const bubble = state.streaming;
    state.streaming = null;
    state.keys.add(key);
    bubble.classList.remove("streaming");
    bubble.removeAttribute("aria-busy");
    bubble.dataset.key = key;
    setMarkdown(bubble, message.text);
    if (unread) markUnread(bubble, message.id);
  } else {
    addBubble(key, "assistant", message.text, message.created_at || message.at, { unread, id: message.id });
  }
}

let ackTimer = null;
function acknowledgeSeen() {
  // "Seen" is: shown while the page is visible. Unseen replies stay marked and unread.
  if (document.visibilityState !== "visible" || state.unread.size === 0 || ackTimer) return;
  ackTimer = setTimeout(async () => {
    ackTimer = null;
    const ids = [...state.unread.keys()];
    try {
      await api("POST", sessionPath("outbox/ack"), { ids });
    } catch (error) {
      return note(`could not mark replies as read: ${error.message}`);
    }
    for (const id of ids) {
      const bubble = state.unread.get(id);
      state.unread.delete(id);
      setTimeout(() => {
        bubble.classList.remove("unread");
        bubble.querySelector(".badge")?.remove();
      }, 1000);
    }
  }, 300);
}

async function sendMessage(text, kind = "user.input") {
  const data = await api("POST", "/api/messages", { session: state.session, text, kind });
  return data.event_id;
}

// --- timeline --------------------------------------------------------------------

function addEntry(key, kind, head, ...body) {
  if (state.keys.has(key)) return null;
  state.keys.add(key);
  const entry = el("li", { class: `entry ${kind}`, "data-key": key }, el("div", { class: "head" }, ...head), ...body);
  const list = $("timeline");
  follow(list, () => list.append(entry));
  // A page left open for weeks keeps only the newest entries (their keys stay seen).
  while (list.childElementCount > MAX_ENTRIES) list.firstElementChild.remove();
  return entry;
}

const tag = (text, cls = "") => el("span", { class: `tag ${cls}`, text });

function showEvent(event) {
  state.lastSeq = Math.max(state.lastSeq, event.seq);
  const source = event.source || {};
  const who = [source.type, source.principal].filter(Boolean).join(":");
  const lateFor = event.kind === "tool.result" && event.id.startsWith("tool:") ? event.id.split(":").pop() : null;
  const head = [
    el("span", { class: "kind", text: event.kind }),
    tag(`from ${who || "?"}`),
    tag(`via ${event.channel}`),
    tag(source.trusted ? "trusted" : "untrusted", source.trusted ? "" : "untrusted"),
    event.strategy ? tag(event.strategy, event.strategy) : tag(event.status),
    el("span", { class: "time", text: clock(event.accepted_at) }),
  ];
  const body = [];
  if (event.reason) body.push(el("div", { class: "reason", text: `router: ${event.strategy} — ${event.reason}` }));
  if (lateFor) body.push(el("div", { class: "reason", text: `late result of tool call ${lateFor}: pays its placeholder` }));
  if (event.text) body.push(longText("text", event.text));
  addEntry(`e:${event.id}`, "event", head, ...body);
  if (lateFor) {
    state.lateResults.set(lateFor, event.seq);
    markPaid(lateFor);
  }
  // The owner's own words, from any channel (this page, the CLI, a chat app).
  const fromUser = source.trusted === true && (event.kind === "user.input" || event.kind === "user.interrupt");
  if (fromUser) addBubble(`u:${event.id}`, "user", event.text, event.accepted_at);
}

async function refreshEvents() {
  const session = state.session;
  const data = await api("GET", sessionPath(`events?after=${state.lastSeq}&limit=500`));
  if (session === state.session) data.events.forEach(showEvent);
}

function toolEntry(callId, name) {
  let entry = state.tools.get(callId);
  if (!entry) {
    entry = addEntry(`t:${callId}`, "tool", [el("span", { class: "kind", text: `tool ${name}` }), tag(callId), el("span", { class: "state tag", text: "running" }), el("span", { class: "time", text: clock() })]);
    entry.append(el("div", { class: "args" }), el("div", { class: "result" }));
    state.tools.set(callId, entry);
  }
  return entry;
}

function setToolParts(entry, { args, result, stateText, placeholder }) {
  if (args !== undefined) entry.querySelector(".args").replaceChildren(longText("arguments", args));
  if (result !== undefined) entry.querySelector(".result").replaceChildren(longText("result", result));
  if (stateText) entry.querySelector(".state").textContent = stateText;
  if (placeholder && !entry.querySelector(".placeholder")) {
    entry.querySelector(".head").append(tag("placeholder: the result comes later", "placeholder"));
  }
}

function markPaid(callId) {
  const entry = state.tools.get(callId);
  const seq = state.lateResults.get(callId);
  if (!entry || seq === undefined || entry.querySelector(".paid")) return;
  entry.querySelector(".head").append(tag(`paid by event #${seq}`, "paid"));
}

function showToolItem(item) {
  const entry = toolEntry(item.call_id, item.name);
  if (item.state === "started") setToolParts(entry, { args: item.preview, stateText: "running" });
  else if (item.state === "progress") setToolParts(entry, { stateText: `running ${Math.round(item.elapsed_s)} s` });
  else setToolParts(entry, { result: item.preview, stateText: `${item.outcome}${item.is_error ? " (error)" : ""} in ${item.elapsed_s} s` });
}

function showToolsFrom(messages) {
  // The trajectory holds every call's full arguments and result.
  const results = new Map();
  for (const m of messages) if (m.role === "tool") results.set(m.tool_call_id, typeof m.content === "string" ? m.content : JSON.stringify(m.content));
  for (const m of messages) {
    for (const call of m.role === "assistant" ? m.tool_calls || [] : []) {
      const fn = call.function || {};
      const entry = toolEntry(call.id, fn.name);
      const result = results.get(call.id);
      setToolParts(entry, {
        args: fn.arguments,
        result,
        stateText: result === undefined ? "running" : "done",
        placeholder: result !== undefined && result.startsWith(PLACEHOLDER),
      });
      markPaid(call.id);
    }
  }
}

async function refreshTools() {
  const session = state.session;
  const data = await api("GET", sessionPath("trajectory"));
  if (session === state.session) showToolsFrom(data.messages);
}

async function refreshModelCalls() {
  const session = state.session;
  const data = await api("GET", `/web/sessions/${seg(session)}/model-calls`);
  if (session !== state.session) return;
  const perRun = new Map();
  for (const call of data.calls) {
    const n = (perRun.get(call.run_id) || 0) + 1;
    perRun.set(call.run_id, n);
    const tokens = `${call.prompt_tokens} in / ${call.completion_tokens} out tokens, ${call.cached_tokens} cached`;
    addEntry(`m:${call.run_id}:${n}`, "model", [
      el("span", { class: "kind", text: "model call" }),
      tag(call.model || "no model"),
      tag(`${(call.latency_s * 1000).toFixed(0)} ms`),
      tag(call.outcome, call.outcome === "ok" ? "" : "cancel"),
    ], el("div", { class: "reason", text: `${tokens}${call.finish_reason ? `, finish: ${call.finish_reason}` : ""}` }));
  }
}

// The daemon's rule for session names (wakeful/kernel/session_names.py), kept once in
// the page: the new-session field's pattern.
function isSessionName(name) {
  return new RegExp(`^(?:${$("new-session-name").pattern})$`, "v").test(name);
}

function note(text, kind = "alert") {
  addEntry(`n:${Date.now()}:${Math.random()}`, kind, [el("span", { class: "kind", text }), el("span", { class: "time", text: clock() })]);
}

// --- tasks, timers, approvals, pairing ----------------------------------------------

function percent(progress) {
  const match = /([\d.]+)\s*%/.exec(progress || "");
  return match ? Math.min(100, parseFloat(match[1])) : null;
}

function taskCard(task) {
  const label = task.command || task.tool || task.task_id;
  const value = percent(task.progress);
  const bar = el("progress", { max: "100", "aria-label": `progress of ${label}` });
  if (value !== null) bar.value = value;
  const cancel = task.kind ? el("button", {
    class: "small danger", type: "button", "aria-label": `Cancel ${label}`, text: "Cancel",
    onclick: async (e) => {
      e.target.disabled = true;
      try {
        await api("POST", `/web/sessions/${seg(state.session)}/tasks/${seg(task.task_id)}/cancel`);
      } catch (error) {
        note(`cancel failed: ${error.message}`);
      }
      refreshStatus();
    },
  }) : null;
  const detail = [task.progress, `${task.runtime_s} s`].filter(Boolean).join(" · ");
  return el("li", { class: "card", "data-task": task.task_id },
    el("div", { class: "row" }, el("code", { text: label, title: label }), cancel),
    bar, el("div", { class: "detail", text: detail }));
}

// The model's own plan (update_plan), as the status bar shows it to the model.
const PLAN_MARKS = { done: "✓", in_progress: "▶", pending: "○" };
function planCards(plan) {
  const items = (plan && plan.items) || [];
  const cards = items.map((item) => el("li", { class: `card plan-${item.status}` },
    el("div", { class: "row" }, el("span", { text: `${PLAN_MARKS[item.status] || "○"} ${item.title}` })),
    item.due ? el("div", { class: "detail", text: `due ${new Date(item.due).toLocaleString()}` }) : null));
  if (items.length && plan.tainted) {
    cards.push(el("li", { class: "card detail", text: "Written while this session was tainted: the model's notes, not your instructions." }));
  }
  return cards;
}

function timerCard(timer) {
  const when = timer.next_fire_time ? `next ${new Date(timer.next_fire_time).toLocaleString()}` : timer.state;
  return el("li", { class: "card" },
    el("div", { class: "row" }, el("span", { text: timer.name || timer.message })),
    el("div", { class: "detail", text: `${timer.schedule} · ${when}` }));
}

// Sources the agent connected itself (connect_channel), from /api/status.
function subscriptionCard(sub) {
  const filter = Object.entries(sub.filter || {})
    .filter(([, v]) => v !== null && v !== "" && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ");
  const fired = sub.fired ? `fired ${sub.fired}×, last ${when(sub.last_fired_at)}` : "not fired yet";
  const state = sub.state === "active" ? fired : `ended: ${sub.ended_reason}`;
  // A source's own line ("watching /the/path") need not name the path the filter shows.
  const path = sub.filter?.path;
  const detail = path && sub.detail?.endsWith(` ${path}`) ? sub.detail.slice(0, -path.length - 1) : sub.detail;
  return el("li", { class: "card", "data-subscription": sub.subscription_id },
    el("div", { class: "row" }, el("code", { text: sub.subscription_id }), el("span", { text: sub.note || sub.kind })),
    el("div", { class: "detail", text: [sub.kind, filter].filter(Boolean).join(" · ") }),
    el("div", { class: "detail", text: [state, detail].filter(Boolean).join(" · ") }));
}

// What the agent saved to memory while its session had read a third party's words
// waits for the owner (docs/memory.md): Keep approves it into memory, Forget drops it.
async function refreshMemory() {
  let listing;
  try {
    listing = await api("GET", "/api/memory");
  } catch (error) {
    $("memory-section").hidden = error.status === 404; // [memory] enabled = false
    return;
  }
  $("memory-section").hidden = false;
  const waiting = listing.entries.filter((e) => e.status === "review");
  $("memory").replaceChildren(...waiting.map(memoryCard));
}

function memoryCard(entry) {
  const decide = async (action) => {
    card.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    try {
      await api("POST", `/api/memory/${seg(entry.id)}/${action}`);
    } catch (error) {
      note(`could not ${action} ${entry.id}: ${error.message}`);
    }
    soon("memory", refreshMemory);
  };
  const card = el("li", { class: "card", "data-memory": entry.id, "aria-label": `Memory entry ${entry.id} waiting for review` },
    el("div", { class: "row" }, el("span", { text: entry.text, title: entry.text }), tag(entry.id)),
    el("div", { class: "detail", text: `saved in session ${entry.session} after it read ${entry.tainted}` }),
    el("div", { class: "buttons" },
      el("button", { type: "button", class: "small approve", text: "Keep", "aria-label": `Keep ${entry.id} in memory`, onclick: () => decide("approve") }),
      el("button", { type: "button", class: "small danger", text: "Forget", "aria-label": `Forget ${entry.id}`, onclick: () => decide("forget") })));
  return card;
}

// --- usage chart: tokens per day (GET /api/usage), inline SVG, no library ------------

const USAGE_DAYS = 14;
const SVG = "http://www.w3.org/2000/svg";
const whole = (n) => Number(n || 0).toLocaleString("en");
const compact = (n) => new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 }).format(n);
const dollars = (usd) => `$${usd.toFixed(usd < 1 ? 4 : 2)}`;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

// The last `days` calendar days in the zone the daemon counts them in, oldest first.
function lastDays(days, zone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en", {
    timeZone: zone || undefined, year: "numeric", month: "numeric", day: "numeric",
  }).formatToParts(new Date()).map((p) => [p.type, Number(p.value)]));
  const keys = [];
  for (let back = days - 1; back >= 0; back--) {
    keys.push(new Date(Date.UTC(parts.year, parts.month - 1, parts.day - back)).toISOString().slice(0, 10));
  }
  return keys;
}

// 1, 2 or 5 times a power of ten, at least `value`: the chart's top line.
function niceCeiling(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((top) => top >= value);
}

function usageChart(report) {
  const byDay = new Map(report.rows.map((r) => [r.key, r]));
  const days = lastDays(USAGE_DAYS, report.timezone).map((key) => byDay.get(key) || { key, calls: 0, tokens_in: 0, tokens_out: 0, cost_usd: 0 });
  const W = 300, H = 132, left = 36, right = 4, top = 8, bottom = 18;
  const plotH = H - top - bottom, slot = (W - left - right) / days.length;
  const ceiling = niceCeiling(Math.max(...days.map((d) => d.tokens_in + d.tokens_out)));
  const y = (tokens) => top + plotH - (tokens / ceiling) * plotH;
  // A day with any use stays visible beside one with a million tokens.
  const low = (tokens, size) => (tokens > 0 ? Math.max(size, 1.5) : 0);
  // The totals of the days drawn (the API's window is 14 × 24 h back from now, which
  // may reach into a 15th calendar day).
  const total = days.reduce((sum, d) => ({
    calls: sum.calls + d.calls, tokens_in: sum.tokens_in + d.tokens_in, tokens_out: sum.tokens_out + d.tokens_out,
    cost_usd: sum.cost_usd === null || d.cost_usd === null ? null : sum.cost_usd + d.cost_usd,
  }), { calls: 0, tokens_in: 0, tokens_out: 0, cost_usd: 0 });
  const summary = `Tokens per day over the last ${USAGE_DAYS} days: ${whole(total.tokens_in)} in, ${whole(total.tokens_out)} out`;
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": summary, class: "chart" });
  for (const tokens of [0, ceiling / 2, ceiling]) {
    chart.append(
      svg("line", { x1: left, x2: W - right, y1: y(tokens), y2: y(tokens), class: "grid" }),
      Object.assign(svg("text", { x: left - 4, y: y(tokens) + 3, "text-anchor": "end", class: "axis" }), { textContent: compact(tokens) }));
  }
  days.forEach((day, i) => {
    const x = left + i * slot + slot * 0.15, width = slot * 0.7;
    const inH = low(day.tokens_in, y(0) - y(day.tokens_in)), outH = low(day.tokens_out, y(0) - y(day.tokens_out));
    const cost = day.cost_usd === null ? "" : `, ${dollars(day.cost_usd)}`;
    const bar = svg("g", { class: "day", "data-day": day.key, "data-in": day.tokens_in, "data-out": day.tokens_out },
      Object.assign(svg("title"), { textContent: `${day.key}: ${whole(day.tokens_in)} tokens in, ${whole(day.tokens_out)} out, ${whole(day.calls)} calls${cost}` }),
      svg("rect", { class: "in", x, width, y: y(0) - inH, height: inH }),
      svg("rect", { class: "out", x, width, y: y(0) - inH - outH, height: outH }));
    // Every other day's date under the bars (all of them would crowd a phone), and today.
    if ((days.length - 1 - i) % 2 === 0) {
      bar.append(Object.assign(svg("text", { x: x + width / 2, y: H - 5, "text-anchor": "middle", class: "axis" }), { textContent: String(Number(day.key.slice(8))) }));
    }
    chart.append(bar);
  });
  const totals = [`${whole(total.calls)} calls`, `${whole(total.tokens_in)} tokens in`, `${whole(total.tokens_out)} out`];
  if (total.cost_usd !== null) totals.push(dollars(total.cost_usd));
  const legend = el("p", { class: "legend" },
    el("span", { class: "key in", "aria-hidden": "true" }), " in ",
    el("span", { class: "key out", "aria-hidden": "true" }), " out",
    total.cost_usd === null && total.calls ? el("span", { class: "hint", text: " · no price set for a model used ([budget.prices])" }) : null);
  return [chart, legend, el("p", { class: "totals", id: "usage-totals", text: totals.join(" · ") })];
}

async function refreshUsage() {
  const report = await api("GET", `/api/usage?by=day&days=${USAGE_DAYS}`);
  $("usage").replaceChildren(...usageChart(report));
}

async function refreshStatus() {
  refreshMemory().catch(() => {});
  const status = await api("GET", "/api/status");
  const sessions = status.sessions || {};
  fillSessions(Object.keys(sessions));
  const mine = sessions[state.session] || { busy: false, tasks: [] };
  setBusy(mine.busy);
  const tasks = mine.tasks.filter((t) => t.kind !== "timer" && t.state === "running");
  const timers = mine.tasks.filter((t) => t.kind === "timer" && t.state === "scheduled");
  $("plan").replaceChildren(...planCards(mine.plan));
  $("tasks").replaceChildren(...tasks.map(taskCard));
  $("timers").replaceChildren(...timers.map(timerCard));
  const subs = ((status.subscriptions || {}).subscriptions || []).filter((s) => s.session === state.session);
  $("subscriptions").replaceChildren(...subs.map(subscriptionCard));
  showTrust(status.safety); // the same overview GET /api/safety answers
  showSystemAlerts(status.system);
  // Progress comes from the task's output; poll only while something runs.
  clearTimeout(state.taskPoll);
  if (tasks.length) state.taskPoll = setTimeout(() => refreshStatus().catch(() => {}), 2000);
}

// Approvals: every session's pending calls, as cards kept by id (a refresh never
// throws away a reason being typed).

function when(iso) {
  const date = new Date(iso);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }) : date.toLocaleString();
}

function duration(seconds) {
  const minutes = Math.floor(seconds / 60);
  if (minutes >= 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  return minutes ? `${minutes} min ${String(seconds % 60).padStart(2, "0")} s` : `${seconds} s`;
}

function expiryText(expiresAt, kind) {
  const left = Math.round((new Date(expiresAt) - Date.now()) / 1000);
  const at = kind === "input" ? `the default applies at ${when(expiresAt)}` : `denied at ${when(expiresAt)}`;
  return left > 0 ? `${at} unless you decide (in ${duration(left)})` : `${at}: timing out now`;
}

function argumentText(args) {
  if (typeof args === "string") return args;
  const compact = JSON.stringify(args);
  return compact.length <= LONG ? compact : JSON.stringify(args, null, 2);
}

function approvalCard(a) {
  const label = `${a.tool} (${a.id})`;
  const input = el("input", { id: `deny-reason-${a.id}`, maxlength: "2000", autocomplete: "off", placeholder: "e.g. not from a stranger" });
  const buttons = el("div", { class: "buttons" });
  const form = el("form", {
    class: "deny-form", hidden: true, "aria-label": `Deny ${label}`,
    onsubmit: (e) => { e.preventDefault(); decideApproval(card, a, "deny", input.value.trim()); },
  },
  el("label", { for: input.id, text: "Why not? (optional: the model is told)" }), input,
  el("div", { class: "buttons" },
    el("button", { type: "submit", class: "small danger", text: "Deny", "aria-label": `Confirm: deny ${label}` }),
    el("button", { type: "button", class: "small quiet", text: "Cancel", onclick: () => { form.hidden = true; buttons.hidden = false; deny.focus(); } })));
  const approve = el("button", { type: "button", class: "small approve", text: "Approve", "aria-label": `Approve ${label}`, onclick: () => decideApproval(card, a, "approve", "") });
  const deny = el("button", { type: "button", class: "small danger deny", text: "Deny…", "aria-label": `Deny ${label}`, onclick: () => { buttons.hidden = true; form.hidden = false; input.focus(); } });
  // request_human_input wants words, not a yes: an answer field instead of Approve.
  const answer = el("input", { id: `answer-${a.id}`, maxlength: "2000", autocomplete: "off", "aria-label": `Your answer to ${a.id}` });
  const answerForm = a.kind === "input" ? el("form", {
    class: "answer-form", "aria-label": `Answer ${label}`,
    onsubmit: (e) => { e.preventDefault(); if (answer.value.trim()) decideApproval(card, a, "answer", answer.value.trim()); },
  }, answer, el("button", { type: "submit", class: "small approve", text: "Answer" })) : null;
  if (answerForm) buttons.append(answerForm, deny); else buttons.append(approve, deny);
  const card = el("li", { class: "card approval", "data-approval": a.id, "aria-label": `Approval ${label} in session ${a.session}` },
    el("div", { class: "row" }, el("code", { text: a.tool, title: a.tool }), tag(`session ${a.session}`), tag(a.id)),
    // The effect in full, always open: it is what Approve approves (the raw arguments stay folded).
    a.effect ? el("pre", { class: "effect", "aria-label": `What ${a.tool} would do`, text: a.effect }) : null,
    longText("arguments", argumentText(a.arguments)),
    el("div", { class: "why" }, el("span", { class: "reason", text: !a.kind || a.kind === "call" ? "why: " : "question: " }), el("span", { text: a.reason })),
    a.tainted_by ? el("div", { class: "detail", text: `tainted by: ${a.tainted_by}` }) : null,
    el("div", { class: "detail" }, `asked ${when(a.requested_at)} · `, el("span", { class: "countdown", "data-expires": a.expires_at, "data-kind": a.kind || "call", text: expiryText(a.expires_at, a.kind) })),
    buttons, form);
  return card;
}

async function decideApproval(card, a, decision, reason) {
  card.classList.add("deciding");
  card.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  try {
    const body = decision === "answer" ? { decision, answer: reason } : { decision, reason };
    await api("POST", `/api/approvals/${seg(a.id)}`, body);
  } catch (error) {
    note(`${decision} ${a.tool} (${a.id}): ${error.message}`);
    card.classList.remove("deciding"); // still pending if the daemon did not take it
    card.querySelectorAll("button").forEach((b) => { b.disabled = false; });
  }
  soon("approvals", refreshApprovals); // a 409 (decided elsewhere) also takes the card away
  soon("status", refreshStatus); // a denial counts towards the breaker
}

async function refreshApprovals() {
  const pending = await api("GET", "/api/approvals");
  const list = $("approvals");
  const wanted = new Set(pending.map((a) => a.id));
  for (const card of [...list.children]) if (!wanted.has(card.dataset.approval)) card.remove();
  const shown = new Set([...list.children].map((card) => card.dataset.approval));
  const fresh = pending.filter((a) => !shown.has(a.id));
  list.append(...fresh.map(approvalCard));
  const announce = state.approvalsSeen ? fresh.filter((a) => !state.approvalsSeen.has(a.id)) : [];
  state.approvalsSeen = new Set([...(state.approvalsSeen || []), ...wanted]);
  if (announce.length) {
    $("announce").textContent = announce.length === 1
      ? `New approval request: ${announce[0].tool} in session ${announce[0].session}`
      : `${announce.length} new approval requests`;
  }
  const count = pending.length;
  $("approvals-count").textContent = String(count);
  $("approvals-count").hidden = count === 0;
  $("approvals-count").setAttribute("aria-label", `${count} waiting`);
  $("approvals-badge").textContent = `${count} waiting for approval`;
  $("approvals-badge").hidden = count === 0;
  document.title = count ? `(${count}) wakeful` : "wakeful";
  clearInterval(state.countdown);
  state.countdown = count ? setInterval(tickCountdowns, 1000) : null;
}

function tickCountdowns() {
  for (const node of document.querySelectorAll("#approvals .countdown")) node.textContent = expiryText(node.dataset.expires, node.dataset.kind);
}

// --- this session's trust: taint and the circuit breaker ----------------------------

// Open system alerts (disk, memory, a stuck queue, a failing component), for every
// session: they are about the daemon. A resolved one leaves the list it comes from.
function showSystemAlerts(system) {
  const open = system?.open || [];
  $("system-banner").hidden = !open.length;
  $("system-title").textContent = open.length > 1 ? `${open.length} system alerts:` : "System alert:";
  $("system-alerts").replaceChildren(...open.map((a) => el("li", { "data-alert": a.alert_id },
    el("code", { text: a.condition }), ` ${a.text} `, el("span", { class: "time", text: `since ${when(a.since)}` }))));
}

function showTrust(safety) {
  const taint = safety?.tainted?.[state.session];
  $("taint-banner").hidden = !taint;
  if (taint) $("taint-summary").textContent = `${taint.summary} (since ${when(taint.since)})`;
  else showTaintConfirm(false);
  const breaker = safety?.breaker || {};
  const denials = breaker.denials?.[state.session] || 0;
  const tripped = typeof breaker.trip_after === "number" && denials >= breaker.trip_after;
  $("breaker-banner").hidden = !tripped;
  if (tripped) {
    $("breaker-detail").textContent = `${denials} of this session's calls were denied (it trips at ${breaker.trip_after}), `
      + "so its consequential calls are refused until you reset it.";
  }
}

function showTaintConfirm(open) {
  $("taint-confirm").hidden = !open;
  $("taint-clear").hidden = open;
  if (open) $("taint-confirm-yes").focus();
}

async function trustAgain() {
  const session = state.session;
  showTaintConfirm(false);
  try {
    await api("POST", `/api/sessions/${seg(session)}/taint/clear`, {});
  } catch (error) {
    note(`could not trust ${session} again: ${error.message}`);
  }
  await refreshStatus();
}

async function resetBreaker() {
  const session = state.session;
  try {
    await api("POST", `/api/sessions/${seg(session)}/breaker/reset`, {});
  } catch (error) {
    note(`could not reset the breaker of ${session}: ${error.message}`);
  }
  await refreshStatus();
}

async function refreshPairing() {
  let pending = [];
  try {
    pending = (await api("GET", "/api/pairing")).pending || [];
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  $("pairing").replaceChildren(...pending.map((p) => el("li", { class: "card" },
    el("div", { class: "row" },
      el("span", { text: `${p.user_name || p.user_id} on ${p.platform}:${p.name}` }),
      el("span", { class: "buttons" },
        el("button", { class: "small", type: "button", "aria-label": `Approve ${p.user_name || p.user_id}`, text: "Approve", onclick: () => decide(`/api/pairing/${seg(p.platform)}/${seg(p.code)}`, { decision: "approve" }, refreshPairing) }),
        el("button", { class: "small danger", type: "button", "aria-label": `Deny ${p.user_name || p.user_id}`, text: "Deny", onclick: () => decide(`/api/pairing/${seg(p.platform)}/${seg(p.code)}`, { decision: "deny" }, refreshPairing) }))),
    el("div", { class: "detail", text: `code ${p.code} · asked ${p.requested_at ? new Date(p.requested_at * 1000).toLocaleString() : ""}` }))));
}

async function decide(path, body, then) {
  try {
    await api("POST", path, body);
  } catch (error) {
    note(`${path}: ${error.message}`);
  }
  then().catch(() => {});
}

// --- trajectory ------------------------------------------------------------------

async function showTrajectory() {
  const panel = $("trajectory");
  panel.replaceChildren(el("p", { class: "reason", text: "loading…" }));
  let body;
  try {
    body = (await api("GET", sessionPath("request"))).request;
  } catch (error) {
    panel.replaceChildren(el("p", { class: "reason", text: error.message }));
    return;
  }
  const tools = (body.tools || []).map((t) => t.function?.name || t.name).join(", ");
  const parts = [
    el("div", { class: "row" },
      el("p", { class: "reason", text: `Exactly what the next model call sends to ${body.model || "(no model)"}: ${body.messages.length} messages.` }),
      el("button", { class: "small quiet", type: "button", text: "Refresh", onclick: showTrajectory })),
    el("details", {}, el("summary", { text: `${(body.tools || []).length} tools: ${tools}` }), el("pre", { text: JSON.stringify(body.tools, null, 1) })),
  ];
  for (const m of body.messages) {
    const content = typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 1);
    const calls = (m.tool_calls || []).map((c) => `→ ${c.function?.name}(${c.function?.arguments})  [${c.id}]`).join("\n");
    // A compaction's summary stands for everything before it: mark the boundary.
    const boundary = typeof m.content === "string" && m.content.startsWith("[Summary of the earlier conversation");
    const title = boundary ? "compacted: the earlier history, summarised (wakeful trajectory SESSION --full shows it all)"
      : m.role + (m.tool_call_id ? ` · ${m.tool_call_id}` : "");
    parts.push(el("article", { class: boundary ? "role-user boundary" : `role-${m.role}` }, el("h3", { text: title }),
      content ? el("pre", { text: content }) : null, calls ? el("pre", { text: calls }) : null));
  }
  panel.replaceChildren(...parts);
}

function selectTab(name) {
  const trajectory = name === "trajectory";
  $("tab-timeline").setAttribute("aria-selected", String(!trajectory));
  $("tab-trajectory").setAttribute("aria-selected", String(trajectory));
  $("timeline").hidden = trajectory;
  $("trajectory").hidden = !trajectory;
  if (trajectory) showTrajectory();
}

// --- sessions --------------------------------------------------------------------

function fillSessions(names) {
  const select = $("session");
  for (const name of ["main", ...names, state.session]) state.sessions.add(name);
  const all = [...state.sessions];
  const current = [...select.options].map((o) => o.value + (o.textContent.endsWith("•") ? "•" : "")).join();
  const wanted = all.map((n) => n + (state.otherUnread.has(n) ? "•" : "")).join();
  if (current === wanted) return;
  select.replaceChildren(...all.map((name) => el("option", { value: name, text: state.otherUnread.has(name) ? `${name} •` : name })));
  select.value = state.session;
}

function setBusy(busy) {
  state.busy = busy;
  $("stop").hidden = !busy;
}

async function openSession(name) {
  state.session = name;
  localStorage.setItem("wakeful.session", name);
  state.otherUnread.delete(name);
  Object.assign(state, { lastSeq: 0, streaming: null });
  for (const map of [state.keys, state.tools, state.lateResults, state.unread]) map.clear();
  $("messages").replaceChildren(el("li", { class: "empty-chat", text: `No messages in “${name}” yet.` }));
  $("timeline").replaceChildren();
  showTrust(null); // until this session's status is read
  fillSessions([]);
  let done;
  state.ready = new Promise((resolve) => { done = resolve; });
  try {
    const [events, outbox] = await Promise.all([
      api("GET", sessionPath("events?newest=1&limit=200")),
      outboxHistory().catch(() => []),
    ]);
    // The chat, in time order: the owner's messages from the event log, replies from the
    // outbox; as far back as the events shown go.
    const since = events.older && events.events.length ? events.events[0].accepted_at : 0;
    const replies = outbox.filter((m) => m.channel === "chat:web" && m.created_at >= since);
    const items = [
      ...events.events.map((e) => ({ at: e.accepted_at, show: () => showEvent(e) })),
      ...replies.map((m) => ({ at: m.created_at, show: () => showReply(m) })),
    ].sort((a, b) => a.at - b.at);
    items.forEach((item) => item.show());
    await Promise.all([refreshTools(), refreshModelCalls(), refreshStatus()]);
  } catch (error) {
    note(`could not load session ${name}: ${error.message}`);
  } finally {
    done();
  }
  refreshApprovals().catch(() => {});
  refreshPairing().catch(() => {});
  markOtherUnread().catch(() => {});
  if (!$("trajectory").hidden) showTrajectory();
}

async function outboxHistory() {
  // The outbox reads forward only: page to its end, keeping the newest.
  let kept = [];
  for (let after = 0; ;) {
    const { messages } = await api("GET", sessionPath(`outbox?after=${after}&limit=1000`));
    kept = kept.concat(messages).slice(-500);
    if (messages.length < 1000) return kept;
    after = messages[messages.length - 1].id;
  }
}

async function markOtherUnread() {
  // Replies made in other sessions while no page was open: a dot on their names until seen.
  const names = [...$("session").options].map((o) => o.value).filter((n) => n !== state.session);
  for (const name of names) {
    const { messages } = await api("GET", `/api/sessions/${seg(name)}/outbox?unread=1`);
    if (messages.some((m) => m.channel === "chat:web")) state.otherUnread.add(name);
  }
  fillSessions([]);
}

// --- the live feed -----------------------------------------------------------------

const refresh = {}; // coalesces reads: one in flight, one more queued at most
function soon(name, read) {
  const slot = refresh[name] || (refresh[name] = { running: null, again: false });
  if (slot.running) { slot.again = true; return; }
  slot.running = read().catch((error) => note(`${name}: ${error.message}`)).finally(() => {
    slot.running = null;
    if (slot.again) { slot.again = false; soon(name, read); }
  });
}

async function onFeed(type, item) {
  await state.ready;
  if (type === "resync") {
    await openSession(state.session);
    return note(`reconnected (${item.reason}): this session was read again from the records`, "notice");
  }
  if (type === "pairing") return refreshPairing(); // someone new asks to be let in
  if (type === "approval" || (type === "event" && item.kind === "approval.decided")) {
    // The panel shows every session's approvals; the banners follow the taint it came with.
    soon("approvals", refreshApprovals);
    soon("status", refreshStatus);
    if (type === "approval") return;
  }
  // The system banner shows on every session's page, whichever session the alert went to.
  if (type === "event" && item.kind === "system.alert") soon("status", refreshStatus);
  // Usage counts every session's model calls: a run anywhere may have added some.
  if (type === "run" && item.state === "idle") soon("usage", refreshUsage);
  if (item.session !== state.session) {
    if (type === "reply") { state.otherUnread.add(item.session); fillSessions([]); }
    if (type === "event") soon("status", refreshStatus);
    return;
  }
  switch (type) {
    case "event": await refreshEvents(); break; // awaited: what follows comes after it
    case "delta": streamDelta(item.delta, item.at); break;
    case "discarded":
      retractStreaming(item.cause);
      note(`the streamed reply (${item.chars} characters) was discarded: ${item.cause}`, "alert");
      break;
    case "reply": showReply(item); break;
    case "run":
      setBusy(item.state === "busy");
      if (item.state === "idle") {
        soon("model calls", refreshModelCalls);
        soon("tools", refreshTools);
        soon("status", refreshStatus);
      }
      break;
    case "tool":
      showToolItem(item);
      if (item.state === "started") soon("model calls", refreshModelCalls);
      break;
    case "task": soon("status", refreshStatus); break;
    case "alert": note(item.text); break;
  }
}

let chain = Promise.resolve(); // feed items are handled one after another, in order
let lastFeedId = "";

function connect() {
  // The browser reconnects by itself, sending Last-Event-ID; this URL says the same for a
  // stream it gave up on (an HTTP error such as 503 while the daemon stops).
  const source = new EventSource(lastFeedId ? `/web/stream?after=${seg(lastFeedId)}` : "/web/stream");
  const status = $("connection");
  source.onopen = () => { status.textContent = "live"; status.className = "connection live"; };
  source.onerror = () => {
    status.textContent = "reconnecting…";
    status.className = "connection";
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
  };
  for (const type of FEED_TYPES) {
    source.addEventListener(type, (message) => {
      if (message.lastEventId) lastFeedId = message.lastEventId;
      const item = JSON.parse(message.data);
      chain = chain.then(() => onFeed(type, item)).catch((error) => console.error(error));
    });
  }
}

// --- wiring ------------------------------------------------------------------------

async function start() {
  state.csrf = (await api("GET", "/web/session")).csrf;
  connect();
  const message = $("message");
  message.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = message.value;
    if (!text.trim()) return;
    message.value = "";
    const sentAt = Date.now() / 1000; // before the daemon accepts it: ahead of its reply
    try {
      const id = await sendMessage(text);
      addBubble(`u:${id}`, "user", text, sentAt);
    } catch (error) {
      message.value = text;
      note(`not sent: ${error.message}`);
    }
  });
  $("stop").addEventListener("click", () => sendMessage("stop", "user.interrupt").catch((error) => note(`stop failed: ${error.message}`)));
  $("session").addEventListener("change", (e) => openSession(e.target.value));
  $("new-session").addEventListener("submit", (e) => {
    e.preventDefault();
    const name = $("new-session-name").value.trim();
    if (!name) return;
    if (!isSessionName(name)) {
      // The daemon would refuse every message to it: say so now, and keep what was typed.
      note(`“${name}” is not a session name: ${$("new-session-name").title}`);
      $("new-session-name").reportValidity(); // and at the field, where a phone's eyes are
      return;
    }
    $("new-session-name").value = "";
    openSession(name);
    message.focus();
  });
  $("tab-timeline").addEventListener("click", () => selectTab("timeline"));
  $("tab-trajectory").addEventListener("click", () => selectTab("trajectory"));
  $("taint-clear").addEventListener("click", () => showTaintConfirm(true));
  $("taint-confirm-no").addEventListener("click", () => { showTaintConfirm(false); $("taint-clear").focus(); });
  $("taint-confirm-yes").addEventListener("click", () => trustAgain());
  $("breaker-reset").addEventListener("click", () => resetBreaker());
  $("logout").addEventListener("click", async () => {
    await api("POST", "/logout").catch(() => {});
    location.replace("/");
  });
  document.addEventListener("visibilitychange", () => {
    acknowledgeSeen();
    if (document.visibilityState === "visible") {
      refreshPairing().catch(() => {});
      soon("approvals", refreshApprovals);
    }
  });
  $("tasks").dataset.empty = "No tasks running.";
  $("plan").dataset.empty = "No plan.";
  $("memory").dataset.empty = "Nothing waits for review.";
  $("timers").dataset.empty = "No timers.";
  $("subscriptions").dataset.empty = "No subscriptions.";
  $("approvals").dataset.empty = "Nothing waits for your approval.";
  $("pairing").dataset.empty = "Nobody asks to pair.";
  // Focus first, not after the session has loaded: whoever started typing meanwhile
  // (the new-session field, a search) keeps their field.
  message.focus();
  if (!isSessionName(state.session)) state.session = "main"; // stored by an older page
  await openSession(state.session);
  soon("usage", refreshUsage);
}

start().catch((error) => note(`the page could not start: ${error.message}`));
