// Jungle Zero play page: draws the board the server describes and sends the person's
// requests. The server (agents/play/server.py) checks every request with the rules
// engine and describes the board itself (terrain, levels, legal moves, effective
// ranks); this page only offers what the server calls legal and shows its refusals.
"use strict";

const ANIMALS = {
  R: { name: "Rat", index: 1, emoji: "\u{1F400}" },
  C: { name: "Cat", index: 2, emoji: "\u{1F408}" },
  D: { name: "Dog", index: 3, emoji: "\u{1F415}" },
  W: { name: "Wolf", index: 4, emoji: "\u{1F43A}" },
  P: { name: "Leopard", index: 5, emoji: "\u{1F406}" },
  T: { name: "Tiger", index: 6, emoji: "\u{1F405}" },
  L: { name: "Lion", index: 7, emoji: "\u{1F981}" },
  E: { name: "Elephant", index: 8, emoji: "\u{1F418}" },
};
const TERMINATION_TITLES = {
  den: "Den entered", all_captured: "All pieces captured", no_moves: "No legal move",
  repetition: "Draw by repetition", no_capture_limit: "Draw: no-capture limit", resign: "Resignation",
  ply_cap: "Stopped at the ply cap",
};
const TOKEN = (document.querySelector('meta[name="jungle-token"]') || {}).content || "";

const $ = (id) => document.getElementById(id);
const state = {
  info: null,
  terrain: null,       // from the server: files, board size, square names, water, traps, dens
  game: null,          // the server's view of the game on screen
  selected: null,      // square name of the selected piece
  flipped: false,      // Blue at the bottom
  userFlip: false,     // the Flip button toggles on top of the automatic orientation
  replay: null,        // {jsonl, games, frames, plies, end, index, ply, record, ranks}
  pollTimer: null,
  busy: false,
  bannerClosed: false,
  emoji: true,
  drag: null,
  typed: "",           // a square being typed on the keyboard ("c", then "c3")
};
const prefs = loadPrefs();

// --- small helpers -------------------------------------------------------------------
function files() { return state.terrain.files; }
function nFiles() { return state.terrain.n_files; }
function nRanks() { return state.terrain.n_ranks; }
function squareName(index) { return state.terrain.squares[index]; }
function squareIndex(name) { return state.terrain.squares.indexOf(name); }
function sideOf(letter) { return letter === letter.toUpperCase() ? "red" : "blue"; }
function title(s) { return s ? s[0].toUpperCase() + s.slice(1) : ""; }

function loadPrefs() {
  const fallback = { hints: true, sound: true, newgame: null };
  try {
    const p = JSON.parse(localStorage.getItem("jungle-prefs") || "{}");
    return { hints: p.hints !== false, sound: p.sound !== false, newgame: p.newgame || null };
  } catch (e) {
    return fallback;
  }
}
function savePrefs() {
  try { localStorage.setItem("jungle-prefs", JSON.stringify(prefs)); } catch (e) { /* private mode */ }
}

// Every POST carries a JSON body and the page's token: the server refuses anything else.
async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (method === "POST") {
    opts.headers["Content-Type"] = "application/json";
    opts.headers["X-Jungle-Token"] = TOKEN;
    opts.body = JSON.stringify(body === undefined ? {} : body);
  }
  let resp;
  try {
    resp = await fetch("/api/" + path, opts);
  } catch (e) {
    throw new Error("the server does not answer (is play.py still running?)");
  }
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const err = new Error((data && data.error) || `HTTP ${resp.status}`);
    err.status = resp.status;
    throw err;
  }
  return data;
}

function say(text, isError) {
  const m = $("message");
  m.textContent = text || "";
  m.className = isError ? "error" : "";
}

// JFEN placement -> 63 letters indexed rank*7+file (a1 = 0), for replay frames.
function boardFromJfen(jfen) {
  const out = new Array(nFiles() * nRanks()).fill("");
  jfen.split(" ")[0].split("/").forEach((row, i) => {
    const rank = nRanks() - 1 - i;
    let f = 0;
    for (const ch of row) {
      if (/[0-9]/.test(ch)) { f += Number(ch); continue; }
      out[rank * nFiles() + f] = ch;
      f += 1;
    }
  });
  return out;
}

// --- sounds (generated, no files) -----------------------------------------------------
let audioCtx = null;
window.jungleSoundLog = [];
function audio() {
  if (!audioCtx) {
    const C = window.AudioContext || window.webkitAudioContext;
    if (!C) return null;
    try { audioCtx = new C(); } catch (e) { return null; }
  }
  if (audioCtx.state === "suspended") audioCtx.resume();
  return audioCtx;
}
function tone(ctx, t0, f0, f1, dur, type, gain) {
  const o = ctx.createOscillator();
  const g = ctx.createGain();
  o.type = type;
  o.frequency.setValueAtTime(f0, t0);
  o.frequency.exponentialRampToValueAtTime(f1, t0 + dur);
  g.gain.setValueAtTime(0.0001, t0);
  g.gain.exponentialRampToValueAtTime(gain, t0 + 0.01);
  g.gain.exponentialRampToValueAtTime(0.0001, t0 + dur);
  o.connect(g).connect(ctx.destination);
  o.start(t0);
  o.stop(t0 + dur + 0.02);
}
const SOUNDS = {
  move: (ctx, t) => tone(ctx, t, 520, 380, 0.08, "triangle", 0.25),
  capture: (ctx, t) => { tone(ctx, t, 260, 90, 0.16, "square", 0.18); tone(ctx, t + 0.05, 180, 70, 0.14, "sawtooth", 0.12); },
  jump: (ctx, t) => tone(ctx, t, 300, 1100, 0.22, "sine", 0.25),
  turn: (ctx, t) => { tone(ctx, t, 660, 660, 0.1, "sine", 0.18); tone(ctx, t + 0.12, 880, 880, 0.14, "sine", 0.18); },
};
function playSound(name, delay) {
  if (!prefs.sound) return;
  window.jungleSoundLog.push(name);
  const ctx = audio();
  if (!ctx) return;
  SOUNDS[name](ctx, ctx.currentTime + (delay || 0));
}
function plySound(ply) { return ply.captured ? "capture" : (ply.jump ? "jump" : "move"); }

// --- emoji check: fall back to letters when the system has no colour emoji font ------
function hasColourEmoji() {
  try {
    const c = document.createElement("canvas");
    c.width = c.height = 32;
    const g = c.getContext("2d");
    g.textBaseline = "top";
    g.font = "26px sans-serif";
    g.fillText("\u{1F418}", 2, 2);
    const d = g.getImageData(0, 0, 32, 32).data;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0 && (Math.abs(d[i] - d[i + 1]) > 30 || Math.abs(d[i + 1] - d[i + 2]) > 30)) return true;
    }
  } catch (e) { /* no canvas */ }
  return false;
}

// --- drawing ----------------------------------------------------------------------------
function buildBoard() {
  const t = state.terrain;
  const board = $("board");
  board.innerHTML = "";
  const water = new Set(t.water);
  for (let row = 0; row < nRanks(); row++) {
    for (let col = 0; col < nFiles(); col++) {
      const rank = state.flipped ? row : nRanks() - 1 - row;
      const file = state.flipped ? nFiles() - 1 - col : col;
      const name = squareName(rank * nFiles() + file);
      const sq = document.createElement("div");
      sq.className = "sq";
      sq.dataset.square = name;
      sq.setAttribute("role", "gridcell");
      sq.setAttribute("aria-label", name);
      let label = "";
      if (water.has(name)) { sq.classList.add("water"); }
      else if (t.traps[name]) { sq.classList.add("trap", "trap-" + t.traps[name]); label = "trap"; }
      else if (t.dens[name]) { sq.classList.add("den", "den-" + t.dens[name]); label = "DEN"; }
      else if ((file + rank) % 2) { sq.classList.add("alt"); }
      if (label) {
        const span = document.createElement("span");
        span.className = "terrain";
        span.textContent = label;
        sq.appendChild(span);
      }
      board.appendChild(sq);
    }
  }
  board.appendChild(arrowLayer());
  $("ranks").innerHTML = "";
  for (let row = 0; row < nRanks(); row++) {
    const d = document.createElement("div");
    d.textContent = String(state.flipped ? row + 1 : nRanks() - row);
    $("ranks").appendChild(d);
  }
  $("files").innerHTML = "";
  for (let col = 0; col < nFiles(); col++) {
    const d = document.createElement("div");
    d.textContent = files()[state.flipped ? nFiles() - 1 - col : col];
    $("files").appendChild(d);
  }
}

// The hint is drawn as an arrow on an SVG layer over the board (board units: one square = 1).
function arrowLayer() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.id = "arrows";
  svg.setAttribute("viewBox", `0 0 ${nFiles()} ${nRanks()}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const defs = document.createElementNS(ns, "defs");
  const marker = document.createElementNS(ns, "marker");
  marker.id = "arrowhead";
  for (const [k, v] of Object.entries({ viewBox: "0 0 10 10", refX: "5", refY: "5", markerWidth: "3",
    markerHeight: "3", orient: "auto-start-reverse" })) marker.setAttribute(k, v);
  const head = document.createElementNS(ns, "path");
  head.setAttribute("d", "M 0 0 L 10 5 L 0 10 z");
  head.setAttribute("class", "arrowhead");
  marker.appendChild(head);
  defs.appendChild(marker);
  svg.appendChild(defs);
  return svg;
}

function squareCentre(name) {
  const i = squareIndex(name);
  const file = i % nFiles();
  const rank = Math.floor(i / nFiles());
  const col = state.flipped ? nFiles() - 1 - file : file;
  const row = state.flipped ? rank : nRanks() - 1 - rank;
  return [col + 0.5, row + 0.5];
}

function drawArrow(move) {
  const svg = $("arrows");
  svg.querySelectorAll("line").forEach((l) => l.remove());
  if (!move) return;
  const [x0, y0] = squareCentre(move.slice(0, 2));
  const [x1, y1] = squareCentre(move.slice(2));
  const len = Math.hypot(x1 - x0, y1 - y0);
  // From the piece's edge to short of the target's centre: the piece stays readable, the head sits on the square.
  const from = 0.3 / len;
  const back = 0.28 / len;
  const line = document.createElementNS("http://www.w3.org/2000/svg", "line");
  for (const [k, v] of Object.entries({ x1: x0 + (x1 - x0) * from, y1: y0 + (y1 - y0) * from,
    x2: x1 - (x1 - x0) * back, y2: y1 - (y1 - y0) * back })) {
    line.setAttribute(k, String(v));
  }
  line.setAttribute("class", "hint-arrow");
  line.setAttribute("marker-end", "url(#arrowhead)");
  line.dataset.move = move;
  svg.appendChild(line);
}

function pieceElement(letter, ranks, trapped) {
  const a = ANIMALS[letter.toUpperCase()];
  const side = sideOf(letter);
  const el = document.createElement("div");
  el.className = "piece " + side + (trapped ? " trapped" : "");
  el.dataset.piece = letter;
  const rank = trapped ? 0 : (ranks ? ranks[a.index] : a.index);
  el.title = `${title(side)} ${a.name} (rank ${rank}${trapped ? " in an enemy trap" : ""})`;
  const glyph = document.createElement("span");
  glyph.className = "glyph" + (state.emoji ? "" : " letter");
  glyph.textContent = state.emoji ? a.emoji : letter.toUpperCase();
  const name = document.createElement("span");
  name.className = "name";
  name.textContent = a.name;
  const r = document.createElement("span");
  r.className = "rank";
  r.textContent = String(rank);
  el.append(glyph, name, r);
  return el;
}

function sqEl(name) { return document.querySelector(`.sq[data-square="${name}"]`); }

function render() {
  if (!state.terrain) return;
  const wantFlip = Boolean(state.game && state.game.human === "blue" && !state.replay) !== state.userFlip;
  if (wantFlip !== state.flipped || !$("board").children.length) {
    state.flipped = wantFlip;
    buildBoard();
  }
  const view = state.replay ? replayView() : state.game;
  document.querySelectorAll(".sq").forEach((sq) => {
    sq.classList.remove("last", "last-from", "selected", "hint");
    sq.querySelectorAll(".piece, .dot, .ring").forEach((e) => e.remove());
  });
  drawArrow(null);
  if (!view) { renderPanel(null); return; }
  const trapped = new Set(view.trapped || []);
  view.board.forEach((letter, i) => {
    if (letter) sqEl(squareName(i)).appendChild(pieceElement(letter, view.ranks, trapped.has(i)));
  });
  if (view.last) {
    sqEl(view.last.from).classList.add("last", "last-from");
    sqEl(view.last.to).classList.add("last");
  }
  if (!state.replay) {
    const g = state.game;
    if (g.hint) {
      sqEl(g.hint.slice(0, 2)).classList.add("hint");
      sqEl(g.hint.slice(2)).classList.add("hint");
      drawArrow(g.hint);
    }
    if (state.selected) {
      sqEl(state.selected).classList.add("selected");
      if (prefs.hints) {
        for (const mv of g.legal) {
          if (mv.slice(0, 2) !== state.selected) continue;
          const target = sqEl(mv.slice(2));
          const mark = document.createElement("div");
          mark.className = target.querySelector(".piece") ? "ring" : "dot";
          target.appendChild(mark);
        }
      }
    }
  }
  renderPanel(view);
}

function replayView() {
  const r = state.replay;
  const f = r.frames[r.ply];
  return { board: boardFromJfen(f.jfen), last: r.ply > 0 ? r.plies[r.ply - 1] : null, ranks: r.ranks,
    side_to_move: f.side_to_move, trapped: f.trapped };
}

function renderPanel(view) {
  const g = state.game;
  document.body.dataset.turn = state.replay ? "replay" : (g ? g.turn : "none");
  document.body.dataset.version = g ? String(g.version) : "";
  document.body.dataset.thinking = g && g.thinking && !state.replay ? "1" : "0";
  document.body.dataset.preparing = g && g.preparing && !state.replay ? "1" : "0";
  const status = $("status");
  if (state.replay) {
    const r = state.replay;
    const n = r.frames.length - 1;
    $("rp-pos").textContent = `${r.ply} / ${n}`;
    if (r.ply === n && r.end) {
      status.textContent = `Replay: game over, ${r.end.result}: ${r.end.reason}`;
    } else {
      const moveNo = r.ply === 0 ? "start" : `after move ${Math.ceil(r.ply / 2)}`;
      status.innerHTML = `Replay (${moveNo}): <span class="turn-${view.side_to_move}">${title(view.side_to_move)}</span> to move`;
    }
    $("matchup").textContent = "";
    const rec = r.record;
    $("replay-info").textContent = `Red: ${rec.red || "?"}, Blue: ${rec.blue || "?"}, result ${rec.result}` +
      (r.end ? ` (${r.end.reason})` : "");
  } else if (g) {
    const stm = `<span class="turn-${g.side_to_move}">${title(g.side_to_move)}</span>`;
    if (g.turn === "over") {
      status.textContent = resultTitle(g) + ": " + g.reason;
    } else if (g.turn === "computer" && g.computer_error) {
      status.innerHTML = `${stm} to move: the computer could not move`;
    } else if (g.turn === "computer") {
      const doing = g.preparing ? "is getting ready (its first start compiles its search)" : "is thinking";
      status.innerHTML = `${stm} to move: the computer ${doing}<span class="thinking" aria-hidden="true"><i></i><i></i><i></i></span>`;
    } else if (g.mode === "two_players") {
      status.innerHTML = `${stm} to move`;
    } else {
      status.innerHTML = `Your move (${stm})`;
    }
    if (g.computer_error) say(g.computer_error, true);
    $("matchup").textContent = (g.mode === "computer"
      ? `You play ${title(g.human)} against ${opponentName(g.opponent)}` : "Two players on one screen") +
      ` · rules: ${g.rules_name}`;
  } else {
    status.textContent = "Start a new game or load a record.";
  }
  const live = g && !state.replay;
  $("save-warning").hidden = !(live && g.save_error);
  $("save-warning").textContent = live && g.save_error ? `Not saved: ${g.save_error}.` : "";
  $("btn-undo").disabled = !live || !g.can_undo;
  $("btn-hint").disabled = !live || g.turn !== "human" || (g.hints_left <= 0 && !g.hint);
  $("btn-resign").disabled = !live || g.turn === "over";
  $("hints-left").textContent = g ? String(g.hints_left) : "3";
  $("download").hidden = !live;
  if (g) {
    $("download").href = `/api/games/${g.id}/record`;
    $("download").setAttribute("download", `jungle-${g.id}.jsonl`);
    $("banner-download").href = `/api/games/${g.id}/record`;
    $("opt-pace").value = g.pace;
    $("opt-pace").disabled = g.mode !== "computer";
  }
  $("game-controls").hidden = !!state.replay;
  $("replay-controls").hidden = !state.replay;
  renderCaptured(view);
  renderMoves();
  const showBanner = live && g.turn === "over" && !state.bannerClosed;
  $("banner").hidden = !showBanner;
  if (showBanner) {
    $("banner-title").textContent = resultTitle(g);
    $("banner-reason").textContent = `${TERMINATION_TITLES[g.termination] || ""}: ${g.reason}`;
  }
}

function opponentName(spec) {
  const levels = (state.info && state.info.levels) || [];
  const level = levels.find((l) => l.spec === spec);
  return level ? `${level.label} (${level.about})` : spec;
}

function resultTitle(g) {
  if (!g.winner) return "Draw";
  if (g.mode === "computer") return g.winner === g.human ? "You win" : "The computer wins";
  return `${title(g.winner)} wins`;
}

// The pieces each side has taken, and the lead in summed ranks.
function renderCaptured(view) {
  const box = $("captured");
  let plies = [];
  if (state.replay) plies = state.replay.plies.slice(0, state.replay.ply);
  else if (state.game) plies = state.game.plies;
  box.hidden = !view;
  if (!view) return;
  const ranks = view.ranks;
  const taken = { red: [], blue: [] };  // pieces taken BY each side
  for (const p of plies) if (p.captured) taken[sideOf(p.captured) === "red" ? "blue" : "red"].push(p.captured);
  const worth = (side) => taken[side].reduce((s, l) => s + ranks[ANIMALS[l.toUpperCase()].index], 0);
  for (const side of ["red", "blue"]) {
    const row = $("captured-" + side);
    const list = row.querySelector(".pieces");
    list.innerHTML = "";
    for (const letter of taken[side]) {
      const chip = document.createElement("span");
      chip.className = "chip " + sideOf(letter);
      chip.title = `${title(sideOf(letter))} ${ANIMALS[letter.toUpperCase()].name}`;
      chip.textContent = state.emoji ? ANIMALS[letter.toUpperCase()].emoji : letter.toUpperCase();
      list.appendChild(chip);
    }
    const lead = worth(side) - worth(side === "red" ? "blue" : "red");
    row.querySelector(".lead").textContent = lead > 0 ? `+${lead}` : "";
    if (!taken[side].length) list.textContent = "—";
  }
}

// One scrolling list, numbered in moves (a Red ply and a Blue ply), each ply as "L d4xd5".
function renderMoves() {
  const list = $("movelist");
  let plies = [];
  let start = "";
  if (state.replay) { plies = state.replay.plies; start = state.replay.record.start; }
  else if (state.game) { plies = state.game.plies; start = state.game.start; }
  const upto = state.replay ? state.replay.ply : plies.length;
  const blueFirst = / b /.test(start);
  list.innerHTML = "";
  let li = null;
  let number = 0;
  plies.forEach((p, i) => {
    const byRed = (i % 2 === 0) !== blueFirst;
    if (!li || byRed) {
      number += 1;
      li = document.createElement("li");
      const num = document.createElement("span");
      num.className = "num";
      num.textContent = `${number}.`;
      li.appendChild(num);
      list.appendChild(li);
      if (!byRed) li.appendChild(document.createElement("span")).className = "mv empty";
    }
    const span = document.createElement("span");
    span.className = "mv " + (byRed ? "red" : "blue") + (p.captured ? " capture" : "");
    span.textContent = p.notation;
    span.title = p.captured ? `${p.notation}: takes the ${ANIMALS[p.captured.toUpperCase()].name}` : p.notation;
    if (i === upto - 1) span.classList.add("current");
    if (state.replay) span.addEventListener("click", () => { state.replay.ply = i + 1; render(); });
    li.appendChild(span);
  });
  $("moves-count").textContent = number ? `(${number})` : "";
  const cur = list.querySelector(".current");
  if (cur) {
    const top = cur.offsetTop - list.offsetTop;
    if (top < list.scrollTop || top > list.scrollTop + list.clientHeight - cur.offsetHeight) {
      list.scrollTop = top - list.clientHeight / 2;
    }
  }
}

// A piece that moved without the person's hand (the computer, a replay step) slides in.
function slide(last) {
  const piece = sqEl(last.to).querySelector(".piece");
  const a = sqEl(last.from).getBoundingClientRect();
  const b = sqEl(last.to).getBoundingClientRect();
  if (!piece || !piece.animate) return;
  piece.animate([{ transform: `translate(${a.left - b.left}px, ${a.top - b.top}px)` }, { transform: "none" }],
    { duration: last.jump ? 260 : 160, easing: "ease-out" });
}

// --- game state from the server -----------------------------------------------------
function setGame(view, quietSounds) {
  const old = state.game;
  const sameGame = old && old.id === view.id;
  if (!sameGame) { state.bannerClosed = false; }
  state.game = view;
  if (state.selected && (view.turn !== "human" || !view.legal.some((m) => m.startsWith(state.selected)))) {
    state.selected = null;
  }
  let arrived = null;
  if (sameGame && !quietSounds && view.moves.length === old.moves.length + 1 && view.last) {
    playSound(plySound(view.last));
    if (old.turn === "computer") {
      arrived = view.last;
      if (view.turn === "human") playSound("turn", 0.25);
    }
  }
  renderRules(view.rules_name, view.rules, view.ranks);
  render();
  if (arrived) slide(arrived);
  schedulePoll();
}

function schedulePoll() {
  clearTimeout(state.pollTimer);
  const g = state.game;
  if (!g || g.turn !== "computer" || state.replay || g.computer_error) return;
  state.pollTimer = setTimeout(async () => {
    try {
      const v = await api("GET", `games/${g.id}`);
      if (state.game && state.game.id === v.id) {
        if (v.version !== state.game.version || v.thinking !== state.game.thinking ||
            v.preparing !== state.game.preparing || v.computer_error) setGame(v);
        else schedulePoll();
      }
    } catch (e) {
      say(e.message, true);
      state.pollTimer = setTimeout(schedulePoll, 1500);
    }
  }, 200);
}

async function act(action, body) {
  const g = state.game;
  if (!g) return null;
  try {
    return await api("POST", `games/${g.id}/${action}`, body || {});
  } catch (e) {
    say(e.message, true);
    if (e.status === 404) showNewGame();
    return null;
  }
}

async function tryMove(from, to) {
  const g = state.game;
  state.selected = null;
  if (!g || state.busy) return;
  state.busy = true;
  const v = await act("move", { move: from + to });
  state.busy = false;
  if (v) { say(""); setGame(v); } else render();
}

async function undo() {
  if (state.replay || !state.game) return;
  const v = await act("undo");
  if (v) {
    state.selected = null;
    state.bannerClosed = false;
    say(`Took back ${v.undone} ${v.undone === 1 ? "ply" : "plies"}.`);
    setGame(v, true);
  }
}

async function hint() {
  if (state.replay || !state.game) return;
  say("Looking for a good move…");
  const v = await act("hint");
  if (v) {
    const p = v.hint;
    say(`Hint: ${p.slice(0, 2)} to ${p.slice(2)} (${v.hints_left} left; asking again here is free).`);
    setGame(v, true);
  }
}

function resign() {
  if (!state.game || state.game.turn === "over" || state.replay) return;
  $("confirm").hidden = false;
  $("confirm-no").focus();
}

async function confirmResign() {
  $("confirm").hidden = true;
  const v = await act("resign");
  if (v) { say(""); setGame(v, true); }
}

// --- pointer and keyboard: click-to-move, drag-and-drop, typed squares -----------------
function squareAt(x, y) {
  const el = document.elementFromPoint(x, y);
  const sq = el && el.closest ? el.closest(".sq") : null;
  return sq ? sq.dataset.square : null;
}

function movable(name) {
  const g = state.game;
  return !!(g && !state.replay && g.turn === "human" && g.legal.some((m) => m.startsWith(name)));
}

function ownPiece(name) {
  const g = state.game;
  const letter = g && g.board[squareIndex(name)];
  return !!(letter && sideOf(letter) === g.side_to_move);
}

function clickSquare(name) {
  const g = state.game;
  if (!g || state.replay) return;
  if (g.turn === "over") { say("The game is over: start a new game, or undo.", true); return; }
  if (g.turn === "computer") { say("The computer is thinking; wait for its move, or undo or resign.", true); return; }
  if (state.selected === name) { state.selected = null; render(); return; }
  if (ownPiece(name)) {
    if (!movable(name)) {
      say(`That ${ANIMALS[g.board[squareIndex(name)].toUpperCase()].name} has no legal move.`, true);
      state.selected = null;
      render();
      return;
    }
    state.selected = name;
    say("");
    render();
    return;
  }
  if (state.selected) { tryMove(state.selected, name); return; }
  const letter = g.board[squareIndex(name)];
  if (letter) say(`That is ${title(sideOf(letter))}'s ${ANIMALS[letter.toUpperCase()].name}; ${title(g.side_to_move)} is to move.`, true);
}

function onPointerDown(ev) {
  if (ev.button !== 0) return;
  const name = squareAt(ev.clientX, ev.clientY);
  if (!name) return;
  audio();  // browsers allow sound only after a gesture
  state.drag = { from: name, x: ev.clientX, y: ev.clientY, active: false, ghost: null, canDrag: movable(name) };
  $("board").setPointerCapture(ev.pointerId);
  ev.preventDefault();
}

function onPointerMove(ev) {
  const d = state.drag;
  if (!d || !d.canDrag) return;
  if (!d.active && Math.hypot(ev.clientX - d.x, ev.clientY - d.y) > 6) {
    d.active = true;
    state.selected = d.from;
    render();
    const piece = sqEl(d.from).querySelector(".piece");
    if (piece) {
      d.ghost = piece.cloneNode(true);
      d.ghost.classList.add("ghost");
      document.body.appendChild(d.ghost);
      piece.classList.add("dragging");
    }
  }
  if (d.active && d.ghost) {
    d.ghost.style.left = ev.clientX + "px";
    d.ghost.style.top = ev.clientY + "px";
  }
}

function onPointerUp(ev) {
  const d = state.drag;
  state.drag = null;
  if (!d) return;
  if (d.ghost) d.ghost.remove();
  if (!d.active) { clickSquare(d.from); return; }
  const to = squareAt(ev.clientX, ev.clientY);
  if (!to || to === d.from) { render(); return; }
  tryMove(d.from, to);
}

function onPointerCancel() {
  const d = state.drag;
  state.drag = null;
  if (d && d.ghost) d.ghost.remove();
  render();
}

// Typing a square ("c3") clicks it: type the piece's square, then the destination's.
function typeSquare(key) {
  if (!state.terrain || !state.game || state.replay) return false;
  if (files().includes(key)) { state.typed = key; say(`Square ${key}…`); return true; }
  if (state.typed && /^[1-9]$/.test(key) && Number(key) <= nRanks()) {
    const name = state.typed + key;
    state.typed = "";
    clickSquare(name);
    if (state.selected === name) say(`${name} selected: type its destination (Esc to clear).`);
    return true;
  }
  state.typed = "";
  return false;
}

// --- new game / continue ---------------------------------------------------------------
function fillLevels() {
  const sel = $("ng-opponent");
  sel.innerHTML = "";
  for (const level of state.info.levels) {
    const o = document.createElement("option");
    o.value = level.name;
    // A network's level plays the rule sets it was trained on, and says which.
    const plays = level.rules ? ` (rules: ${level.rules.join(", ")})` : "";
    o.textContent = `${level.label}: ${level.about}${plays}`;
    sel.appendChild(o);
  }
  const rules = $("ng-rules");
  rules.innerHTML = "";
  for (const set of state.info.rule_sets) {
    const o = document.createElement("option");
    o.value = set.name;
    o.textContent = set.name;
    rules.appendChild(o);
  }
  const custom = document.createElement("option");
  custom.value = "custom";
  custom.textContent = "Checkpoint or player spec…";
  sel.appendChild(custom);
}

// The dialog opens with the last choices made on this browser, else the server's defaults.
function restoreChoices() {
  const info = state.info;
  const levelNames = info.levels.map((l) => l.name);
  const c = prefs.newgame || {
    mode: "computer", side: "red", pace: info.default_pace,
    opponent: levelNames.includes(info.default_opponent) ? info.default_opponent : "custom",
    spec: levelNames.includes(info.default_opponent) ? "" : info.default_opponent,
  };
  const mode = document.querySelector(`input[name="mode"][value="${c.mode}"]`);
  if (mode) mode.checked = true;
  const side = document.querySelector(`input[name="side"][value="${c.side}"]`);
  if (side) side.checked = true;
  $("ng-opponent").value = levelNames.includes(c.opponent) ? c.opponent : (c.opponent === "custom" ? "custom" : levelNames[0]);
  $("ng-spec").value = c.spec || "";
  $("ng-spec").hidden = $("ng-opponent").value !== "custom";
  if (info.paces.includes(c.pace)) $("ng-pace").value = c.pace;
  const ruleNames = info.rule_sets.map((r) => r.name);
  $("ng-rules").value = ruleNames.includes(c.rules) ? c.rules : info.rules_name;
  $("computer-options").disabled = c.mode !== "computer";
}

async function showNewGame() {
  await refreshInfo();
  const last = state.info && state.info.last_game;
  const box = $("continue-box");
  box.hidden = !last;
  if (last) {
    const who = last.mode === "computer" ? `You (${title(last.human)}) against ${opponentName(last.opponent)}` : "Two players";
    const res = last.result === "*" ? "in progress" : `finished, ${last.result}`;
    const moves = Math.ceil(last.moves / 2);
    $("continue-info").textContent = `${who}, ${moves} ${moves === 1 ? "move" : "moves"}, ${res}`;
  }
  if (state.info) restoreChoices();
  if (state.info && state.info.load_error) $("newgame-error").textContent = state.info.load_error;
  $("newgame").hidden = false;
  $("ng-cancel").hidden = !state.game && !state.replay;
}

function hideNewGame() { $("newgame").hidden = true; $("newgame-error").textContent = ""; }

async function startGame(ev) {
  ev.preventDefault();
  const mode = document.querySelector('input[name="mode"]:checked').value;
  const body = { mode };
  const choice = {
    mode, opponent: $("ng-opponent").value, spec: $("ng-spec").value.trim(),
    side: document.querySelector('input[name="side"]:checked').value, pace: $("ng-pace").value,
    rules: $("ng-rules").value,
  };
  body.rules = choice.rules;
  if (mode === "computer") {
    body.opponent = choice.opponent === "custom" ? choice.spec : choice.opponent;
    body.human = choice.side;
    body.pace = choice.pace;
  }
  $("ng-start").disabled = true;
  $("newgame-error").textContent = "";
  say("Starting…");
  // The first start after an install compiles the computer's search: say so while the request waits for it.
  const preparing = mode === "computer" ? watchPreparing() : null;
  try {
    const v = await api("POST", "games", body);
    prefs.newgame = choice;
    savePrefs();
    state.replay = null;
    state.selected = null;
    state.userFlip = false;
    hideNewGame();
    say(mode === "computer" && body.human === "blue" ? "You play Blue; the computer moves first." : "");
    setGame(v, true);
    refreshInfo();
  } catch (e) {
    say("");
    $("newgame-error").textContent = e.message;
  } finally {
    if (preparing) preparing.stop();
    $("ng-start").disabled = false;
  }
}

const PREPARING_TEXT = "Preparing the computer: its first start compiles its search (a minute or two)…";

// Polls /api/info while a request waits, and says "preparing" for as long as the server does.
function watchPreparing() {
  let stopped = false;
  let timer = null;
  const check = async () => {
    try {
      const info = await api("GET", "info");
      if (stopped) return;
      state.info = info;
      if (info.preparing) say(PREPARING_TEXT);
      else if ($("message").textContent === PREPARING_TEXT) say("Starting…");
    } catch (e) { /* the request itself reports a server that does not answer */ }
    if (!stopped) timer = setTimeout(check, 1000);
  };
  if (state.info && state.info.preparing) say(PREPARING_TEXT);
  check();
  return { stop() { stopped = true; clearTimeout(timer); } };
}

async function continueLast(quiet) {
  try {
    const v = await api("GET", "games/last");
    state.replay = null;
    state.selected = null;
    state.userFlip = false;
    hideNewGame();
    say(quiet ? "" : "Continuing the last game.");
    setGame(v, true);
    return true;
  } catch (e) {
    $("newgame-error").textContent = e.message;
    return false;
  }
}

async function refreshInfo() {
  try { state.info = await api("GET", "info"); } catch (e) { say(e.message, true); return; }
  if (!state.game) renderRules(state.info.rules_name, state.info.rules, state.info.ranks);
}

// The rules panel shows the rule set of the game on screen (a saved game keeps its own).
let rulesShown = "";
function renderRules(name, rules, ranks) {
  const key = JSON.stringify([name, rules]);
  if (key === rulesShown) return;
  rulesShown = key;
  $("rules-name").textContent = name;
  const table = $("rules-table");
  table.innerHTML = "";
  for (const [k, v] of Object.entries(rules)) {
    const tr = document.createElement("tr");
    const a = document.createElement("td");
    const b = document.createElement("td");
    a.textContent = k.replace(/_/g, " ");
    b.textContent = k === "no_capture_draw" ? (Number(v) ? `${v} plies` : "off") : String(v).replace(/_/g, " ");
    tr.append(a, b);
    table.appendChild(tr);
  }
  const tr = document.createElement("tr");
  const a = document.createElement("td");
  const b = document.createElement("td");
  a.textContent = "ranks";
  b.textContent = Object.values(ANIMALS).map((x) => `${x.name} ${ranks[x.index]}`).join(", ");
  tr.append(a, b);
  table.appendChild(tr);
}

// --- replay viewer -------------------------------------------------------------------------
async function loadRecordFile(file) {
  const limit = state.info ? state.info.limits.body_bytes : Infinity;
  if (file.size > limit * 0.9) { say(`That file is too large to replay here (${file.size} bytes).`, true); return; }
  await openReplay(await file.text(), 0);
}

async function openReplay(text, index) {
  try {
    const r = await api("POST", "replay", { jsonl: text, index });
    state.replay = { jsonl: text, games: r.games, frames: r.frames, plies: r.plies, end: r.end, index: r.index,
      ply: 0, record: r.record, ranks: r.ranks };
    state.selected = null;
    clearTimeout(state.pollTimer);
    hideNewGame();
    const sel = $("replay-game");
    sel.innerHTML = "";
    r.games.forEach((g) => {
      const o = document.createElement("option");
      o.value = String(g.index);
      o.textContent = `#${g.index + 1}: ${g.red || "?"} vs ${g.blue || "?"}, ${g.result}, ${Math.ceil(g.moves / 2)} moves`;
      sel.appendChild(o);
    });
    sel.value = String(r.index);
    sel.hidden = r.count < 2;
    say(`Loaded game ${r.index + 1} of ${r.count}. Step with the arrows.`);
    render();
  } catch (e) {
    say("Cannot load the record: " + e.message, true);
    if (!$("newgame").hidden) $("newgame-error").textContent = "Cannot load the record: " + e.message;
  }
}

function stepReplay(to) {
  const r = state.replay;
  if (!r) return;
  const before = r.ply;
  r.ply = Math.max(0, Math.min(r.frames.length - 1, to));
  const last = r.ply > 0 ? r.plies[r.ply - 1] : null;
  if (r.ply !== before && last) playSound(plySound(last));
  render();
  if (r.ply === before + 1 && last) slide(last);
}

function closeReplay() {
  state.replay = null;
  say("");
  render();
  schedulePoll();
  if (!state.game) showNewGame();
}

// --- wiring -----------------------------------------------------------------------------
function wire() {
  const board = $("board");
  board.addEventListener("pointerdown", onPointerDown);
  board.addEventListener("pointermove", onPointerMove);
  board.addEventListener("pointerup", onPointerUp);
  board.addEventListener("pointercancel", onPointerCancel);
  $("btn-new").addEventListener("click", showNewGame);
  $("banner-new").addEventListener("click", showNewGame);
  $("banner-close").addEventListener("click", () => { state.bannerClosed = true; render(); });
  $("btn-undo").addEventListener("click", undo);
  $("btn-hint").addEventListener("click", hint);
  $("btn-resign").addEventListener("click", resign);
  $("btn-flip").addEventListener("click", () => { state.userFlip = !state.userFlip; render(); });
  $("confirm-yes").addEventListener("click", confirmResign);
  $("confirm-no").addEventListener("click", () => { $("confirm").hidden = true; });
  $("newgame-form").addEventListener("submit", startGame);
  $("ng-cancel").addEventListener("click", hideNewGame);
  $("btn-continue").addEventListener("click", () => continueLast(false));
  $("ng-opponent").addEventListener("change", () => { $("ng-spec").hidden = $("ng-opponent").value !== "custom"; });
  // The rules panel shows the rule set chosen for the next game while the lobby is open.
  $("ng-rules").addEventListener("change", () => {
    const set = state.info.rule_sets.find((r) => r.name === $("ng-rules").value);
    if (set) renderRules(set.name, set.rules, set.ranks);
  });
  document.querySelectorAll('input[name="mode"]').forEach((r) => r.addEventListener("change", () => {
    $("computer-options").disabled = document.querySelector('input[name="mode"]:checked').value !== "computer";
  }));
  $("opt-hints").checked = prefs.hints;
  $("opt-sound").checked = prefs.sound;
  $("opt-hints").addEventListener("change", () => { prefs.hints = $("opt-hints").checked; savePrefs(); render(); });
  $("opt-sound").addEventListener("change", () => { prefs.sound = $("opt-sound").checked; savePrefs(); if (prefs.sound) audio(); });
  $("opt-pace").addEventListener("change", async () => {
    const v = await act("settings", { pace: $("opt-pace").value });
    if (v) { say(`Pace: ${v.pace}.`); setGame(v, true); }
  });
  for (const id of ["record-file", "ng-record-file"]) {
    $(id).addEventListener("change", (ev) => {
      const f = ev.target.files && ev.target.files[0];
      if (f) loadRecordFile(f);
      ev.target.value = "";
    });
  }
  $("replay-game").addEventListener("change", () => openReplay(state.replay.jsonl, Number($("replay-game").value)));
  $("rp-first").addEventListener("click", () => stepReplay(0));
  $("rp-prev").addEventListener("click", () => stepReplay(state.replay.ply - 1));
  $("rp-next").addEventListener("click", () => stepReplay(state.replay.ply + 1));
  $("rp-last").addEventListener("click", () => stepReplay(state.replay.frames.length - 1));
  $("rp-close").addEventListener("click", closeReplay);
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    const typing = t && ((t.tagName === "INPUT" && t.type === "text") || t.tagName === "SELECT" || t.tagName === "TEXTAREA");
    if (typing && ev.key !== "Escape") return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const modal = !$("newgame").hidden || !$("confirm").hidden;
    if (ev.key === "Escape") {
      if (!$("confirm").hidden) { $("confirm").hidden = true; return; }
      if (!$("newgame").hidden && (state.game || state.replay)) { hideNewGame(); return; }
      state.selected = null;
      state.typed = "";
      say("");
      render();
      return;
    }
    if (modal) return;
    const k = ev.key.toLowerCase();
    if (state.replay) {
      if (ev.key === "ArrowLeft") stepReplay(state.replay.ply - 1);
      else if (ev.key === "ArrowRight") stepReplay(state.replay.ply + 1);
      else if (ev.key === "Home") stepReplay(0);
      else if (ev.key === "End") stepReplay(state.replay.frames.length - 1);
      return;
    }
    if (typeSquare(k)) { ev.preventDefault(); return; }
    if (k === "z" || k === "u") { ev.preventDefault(); undo(); }
    else if (k === "h") { ev.preventDefault(); hint(); }
  });
}

async function main() {
  state.emoji = hasColourEmoji();
  document.body.classList.toggle("letters", !state.emoji);
  wire();
  await refreshInfo();
  if (!state.info) return;
  state.terrain = state.info.terrain;
  fillLevels();
  buildBoard();
  render();
  // A reload continues the game in progress without asking; otherwise the dialog offers the choices.
  const last = state.info.last_game;
  if (last && last.result === "*" && await continueLast(true)) return;
  showNewGame();
}

main();
