"""A table's history as one self-contained HTML page: inline CSS, SVG and script, no network.

The page shows a timeline (x: time, y: the table's version; each change a
dot coloured by actor and labelled with its schema epoch; a new id starts a
new band), the table of changes with their key-level diffs, and a summary of
who changed what, which an inline script builds from the history's JSON.
"""

from __future__ import annotations

import json
from html import escape

from projector.audit.history import TableChange, TableHistory

_PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d")
_W, _H, _PAD = 900, 260, 48

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111;background:#fff}
h1{font-size:20px;margin:0 0 4px} .sub{color:#555;margin-bottom:16px}
svg{border:1px solid #ddd;background:#fafafa}
table{border-collapse:collapse;margin-top:16px;width:100%}
th,td{border-bottom:1px solid #e5e5e5;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6} code{font-size:12px} .added{color:#15803d} .removed{color:#b91c1c}
.changed{color:#a16207} #actors li{margin:2px 0} .dot{display:inline-block;width:10px;
height:10px;border-radius:5px;margin-right:6px}
"""

_SCRIPT = """
const history = JSON.parse(document.getElementById('history').textContent);
const byActor = {};
for (const c of history.changes) {
  (byActor[c.actor] = byActor[c.actor] || []).push(c.intent);
}
const list = document.getElementById('actors');
for (const [actor, intents] of Object.entries(byActor)) {
  const item = document.createElement('li');
  const counts = {};
  for (const i of intents) counts[i] = (counts[i] || 0) + 1;
  item.textContent = actor + ': ' + intents.length + ' change(s) — ' +
    Object.entries(counts).map(([i, n]) => i + ' x' + n).join(', ');
  list.appendChild(item);
}
document.body.dataset.rendered = 'yes';
"""


def history_page(history: TableHistory) -> str:
    """The HTML page of `history` (UTF-8 text)."""
    title = f"{history.catalog}: {history.names[-1]}"
    actors = list(dict.fromkeys(c.actor for c in history.changes))
    data = json.dumps(history.document(), sort_keys=True).replace("</", "<\\/")
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>History of {escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>History of {escape(title)}</h1><div class=sub>names "
        f"{escape(' → '.join(history.names))}; ids "
        f"{escape(', '.join(map(str, history.table_ids)))}; "
        f"{len(history.changes)} changes</div>"
        f"{_timeline(history.changes, actors)}"
        "<h2>Who changed what</h2><ul id=actors></ul>"
        f"<h2>Changes</h2>{_rows(history.changes, actors)}"
        f'<script type="application/json" id=history>{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>"
    )


def _colour(actors: list[str], actor: str) -> str:
    return _PALETTE[actors.index(actor) % len(_PALETTE)]


def _timeline(changes: list[TableChange], actors: list[str]) -> str:
    if not changes:
        return "<p>No changes.</p>"
    times = [c.occurred_at.timestamp() for c in changes]
    low, span = min(times), (max(times) - min(times)) or 1.0
    top = max(c.version for c in changes) or 1
    parts = [f'<svg id=timeline xmlns="http://www.w3.org/2000/svg" width={_W} height={_H} '
             f'viewBox="0 0 {_W} {_H}" role=img aria-label="versions over time">']  # fmt: skip
    parts.append(f'<line x1={_PAD} y1={_H - _PAD} x2={_W - _PAD} y2={_H - _PAD} stroke="#888"/>')
    parts.append(f'<line x1={_PAD} y1={_PAD / 2} x2={_PAD} y2={_H - _PAD} stroke="#888"/>')
    parts.append(f'<text x={_PAD} y={_H - 12} font-size=11>{escape(str(changes[0].occurred_at))}'
                 f'</text><text x={_W - _PAD} y={_H - 12} font-size=11 text-anchor=end>'
                 f'{escape(str(changes[-1].occurred_at))}</text>'
                 f'<text x=8 y={_PAD / 2 + 4} font-size=11>v{top}</text>')  # fmt: skip
    points = []
    previous_id = None
    for change, at in zip(changes, times, strict=True):
        x = _PAD + (at - low) / span * (_W - 2 * _PAD)
        y = _H - _PAD - change.version / top * (_H - 1.5 * _PAD)
        if previous_id is not None and change.table_id != previous_id:
            parts.append(f'<line x1={x:.1f} y1={_PAD / 2} x2={x:.1f} y2={_H - _PAD} '
                         f'stroke="#bbb" stroke-dasharray="4 3"/><text x={x + 3:.1f} '
                         f'y={_PAD / 2 + 10} font-size=10 fill="#666">id {change.table_id}'
                         '</text>')  # fmt: skip
        previous_id = change.table_id
        points.append(f"{x:.1f},{y:.1f}")
        tip = f"rv {change.resource_version} v{change.version} {change.statement} by {change.actor}"
        parts.append(f'<circle cx={x:.1f} cy={y:.1f} r=6 fill="{_colour(actors, change.actor)}">'
                     f'<title>{escape(tip)}</title></circle>'
                     f'<text x={x:.1f} y={y - 10:.1f} font-size=10 text-anchor=middle>'
                     f'e{change.schema_epoch}</text>')  # fmt: skip
    parts.insert(3, f'<polyline points="{" ".join(points)}" fill=none stroke="#999"/>')
    parts.append("</svg>")
    legend = "".join(f'<span><span class=dot style="background:{_colour(actors, a)}"></span>'
                     f"{escape(a)}</span> " for a in actors)  # fmt: skip
    return "".join(parts) + f"<div>{legend}</div>"


def _rows(changes: list[TableChange], actors: list[str]) -> str:
    head = ("<table id=changes><tr><th>rv</th><th>time</th><th>actor</th><th>id</th><th>version"
            "</th><th>epoch</th><th>statement</th><th>keys</th></tr>")  # fmt: skip
    rows = []
    for c in changes:
        keys = "<br>".join(
            f'<span class={k.op}>{k.op}</span> <code>{escape(k.key)}</code>'
            + "".join(f" <code>{escape(n)}: {escape(json.dumps(b))} → {escape(json.dumps(a))}"
                      "</code>" for n, (b, a) in k.fields().items())
            for k in c.keys
        )  # fmt: skip
        rows.append(
            f"<tr><td>{c.resource_version}</td><td>{escape(c.occurred_at.isoformat())}</td>"
            f'<td style="color:{_colour(actors, c.actor)}">{escape(c.actor)}</td>'
            f"<td>{c.table_id}</td><td>{c.version}</td><td>{c.schema_epoch}</td>"
            f"<td>{escape(c.statement)}</td><td>{keys}</td></tr>"
        )
    return head + "".join(rows) + "</table>"
