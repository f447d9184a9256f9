"""The report's HTML: one self-contained page, relative links, inline CSS and a tiny sort script."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from urllib.parse import quote

from vc.listening.gather import ROLE_TITLES, ROLES, Column, Experiment, Utterance, as_number

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 16px 40px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e3e3e3; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.text { text-align: left; }
.notes { background: #fff8e1; border: 1px solid #f0d890; padding: 6px 12px; }
.utt { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; margin: 14px 0; }
.utt h3 { margin: 4px 0; font-size: 16px; }
.players { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 6px 16px; }
.players div { display: flex; flex-direction: column; font-size: 12px; color: #555; }
audio { width: 100%; }
.figs { display: flex; flex-wrap: wrap; gap: 10px; align-items: flex-start; }
img { max-width: 100%; }
.figs img { max-height: 330px; }
.score { font-weight: 600; }
.muted { color: #777; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
"""

# Re-orders the utterance sections by the chosen metric; worst first unless "best first" is ticked.
SCRIPT = """
function sortUtterances() {
  const choice = document.getElementById('sort-key');
  const option = choice.options[choice.selectedIndex];
  const key = option.value, lower = option.dataset.lower === '1';
  const best = document.getElementById('sort-best').checked;
  const list = document.getElementById('utterances');
  const items = Array.from(list.children);
  const value = (item) => {
    const text = item.dataset['k_' + key];
    return text === undefined || text === '' ? NaN : parseFloat(text);
  };
  items.sort((a, b) => {
    if (key === 'id') return a.id < b.id ? -1 : 1;
    const x = value(a), y = value(b);
    if (isNaN(x) !== isNaN(y)) return isNaN(x) ? 1 : -1;
    if (isNaN(x) || x === y) return a.id < b.id ? -1 : 1;
    const worstFirst = lower ? y - x : x - y;
    return best ? -worstFirst : worstFirst;
  });
  items.forEach((item) => list.appendChild(item));
}
document.getElementById('sort-key').addEventListener('change', sortUtterances);
document.getElementById('sort-best').addEventListener('change', sortUtterances);
"""


@dataclass
class Assets:
    """Where the report folder holds each copied or drawn file, as relative links."""

    audio: dict[tuple[str, str], str] = field(default_factory=dict)  # (utt, role) -> audio/...
    alignment: dict[str, str] = field(default_factory=dict)  # utt -> img/...
    mel: dict[str, str] = field(default_factory=dict)
    curves: str | None = None
    evolution: dict[str, str] = field(default_factory=dict)  # fixed dev utterance -> img/...


def render(exp: Experiment, assets: Assets, sort_columns: list[Column], generated: str) -> str:
    title = f"Listening report: {exp.folder.resolve().name}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',  # no favicon request (a 404 when the folder is served)
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="muted">{escape(str(exp.folder))} &middot; written {escape(generated)} by vc report</p>',
    ]
    if exp.notes:
        items = "".join(f"<li>{escape(note)}</li>" for note in exp.notes)
        parts.append(f'<div class="notes"><b>Not in this report</b><ul>{items}</ul></div>')
    parts += _scores_section(exp)
    parts += _training_section(exp, assets)
    parts += _utterances_section(exp, assets, sort_columns)
    if exp.config_text is not None:
        parts.append("<h2>Configuration</h2><details><summary>config.yaml (resolved)</summary>")
        parts.append(f"<pre>{escape(exp.config_text)}</pre></details>")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def _scores_section(exp: Experiment) -> list[str]:
    parts = ['<h2 id="scores">Scores</h2>']
    if not exp.rows:
        return parts + ['<p class="muted">No scores.json: run vc score --json EXP/scores.json.</p>']
    head = "".join(f"<th>{escape(c.title)}</th>" for c in exp.columns)
    body = [
        f"<tr><td>{escape(name)}</td>" + "".join(f"<td>{c.cell(row.get(c.key))}</td>" for c in exp.columns)
        for name, row in exp.rows.items()
    ]
    parts.append(f"<table><tr><th>system</th>{head}</tr>{''.join(body)}</table>")
    if exp.columns:
        arrows = ", ".join(
            f"{escape(c.title)} {'&darr;' if c.lower_is_better else '&uarr;'}"
            for c in exp.columns
            if c.key != "utterances"
        )
        parts.append(f'<p class="muted">better: {arrows}</p>')
    for line in exp.missing:
        parts.append(f'<p class="muted">not computed: {escape(line)}</p>')
    return parts


def _training_section(exp: Experiment, assets: Assets) -> list[str]:
    parts = ['<h2 id="training">Training</h2>']
    if exp.training:
        rows = "".join(
            f'<tr><td>{escape(k)}</td><td class="text">{escape(v)}</td></tr>' for k, v in exp.training.items()
        )
        parts.append(f"<table>{rows}</table>")
    if assets.evolution:
        title, run = "Alignment evolution", "the run"
        if exp.evolution_of_teacher:  # another model made the audio; EXP's attention model taught it
            title = "Alignment evolution of the attention model (the teacher, not the model above)"
            run = f"the teacher's run ({exp.folder})"
        parts.append(
            f"<h3>{escape(title)}</h3><p>Free-running alignment of fixed dev utterances at evaluations "
            f"spread over {escape(run)} (the first ones, log-spaced ones, the last): the blur becoming a "
            "diagonal.</p>"
        )
        strips = [
            f'<p><img src="{quote(link)}" alt="alignment evolution of {escape(utt_id)}"></p>'
            for utt_id, link in assets.evolution.items()
        ]
        parts.append(strips[0])
        if len(strips) > 1:  # the others folded, so the utterances stay near the top
            parts.append(f"<details><summary>{len(strips) - 1} more fixed dev utterances</summary>")
            parts += [*strips[1:], "</details>"]
    if assets.curves:
        parts.append(
            f'<h3>Training curves</h3><p><img src="{quote(assets.curves)}" alt="training curves"></p>'
        )
    return parts


def _utterances_section(exp: Experiment, assets: Assets, sort_columns: list[Column]) -> list[str]:
    parts = [f'<h2 id="utterances-title">Utterances ({len(exp.utterances)})</h2>']
    options = "".join(
        f'<option value="{escape(c.key)}" data-lower="{int(c.lower_is_better)}">'
        f"{escape(c.title)} ({'highest' if c.lower_is_better else 'lowest'} first)</option>"
        for c in sort_columns
    )
    parts.append(
        '<p><label>Sort by <select id="sort-key">'
        f'{options}<option value="id" data-lower="0">utterance id</option></select></label> '
        '<label><input type="checkbox" id="sort-best"> best first</label> '
        '<span class="muted">(the worst conversions first, so the failures are heard first)</span></p>'
    )
    parts.append('<div id="utterances">')
    parts += [_utterance(exp, utt, assets, sort_columns) for utt in exp.utterances]
    parts.append("</div>")
    return parts


def _utterance(exp: Experiment, utt: Utterance, assets: Assets, sort_columns: list[Column]) -> str:
    data = "".join(
        f' data-k_{escape(c.key)}="{"" if (v := as_number(utt.model_scores.get(c.key))) is None else repr(v)}"'
        for c in sort_columns
    )
    summary = " &middot; ".join(
        f'{escape(c.title)} <span class="score">{c.cell(utt.model_scores.get(c.key))}</span>'
        for c in sort_columns
        if as_number(utt.model_scores.get(c.key)) is not None
    )
    out = [f'<section class="utt" id="{escape(utt.utt_id)}"{data}>', f"<h3>{escape(utt.utt_id)}</h3>"]
    if summary:
        out.append(f"<p>{summary}</p>")
    if utt.transcript:
        out.append(f"<p>text: <i>{escape(utt.transcript)}</i></p>")
    for key, heard in (("whisper_hypothesis", "Whisper heard"), ("hypothesis", "pocketsphinx heard")):
        hypothesis = utt.model_scores.get(key)
        if isinstance(hypothesis, str):
            out.append(f"<p>{heard} (converted): <i>{escape(hypothesis) or '(nothing)'}</i></p>")
    players = []
    for role in [*ROLES, *(name for name in utt.files if name not in ROLES)]:
        title = escape(ROLE_TITLES.get(role, role))
        link = assets.audio.get((utt.utt_id, role))
        if link is None:
            if role in ("source", "converted", "target"):
                players.append(f'<div>{title}<span class="muted">missing</span></div>')
            continue
        players.append(f'<div>{title}<audio controls preload="none" src="{quote(link)}"></audio></div>')
    out.append(f'<div class="players">{"".join(players)}</div>')
    figures = []
    if utt.utt_id in assets.alignment:
        figures.append(f'<img loading="lazy" src="{quote(assets.alignment[utt.utt_id])}" alt="alignment">')
    if utt.utt_id in assets.mel:
        figures.append(f'<img loading="lazy" src="{quote(assets.mel[utt.utt_id])}" alt="log-mel">')
    if figures:
        out.append(f'<div class="figs">{"".join(figures)}</div>')
    out.append(_utterance_table(exp, utt))
    out.append("</section>")
    return "\n".join(out)


def _utterance_table(exp: Experiment, utt: Utterance) -> str:
    """This utterance's scores in every row that has them (model, floor, ceilings)."""
    shown = {c.key for c in exp.columns}
    candidates = [*exp.columns, *(c for key, c in exp.titles.items() if key not in shown)]
    columns = [c for c in candidates if any(as_number(s.get(c.key)) is not None for s in utt.scores.values())]
    if not columns:
        return ""
    head = "".join(f"<th>{escape(c.title)}</th>" for c in columns)
    body = "".join(
        f"<tr><td>{escape(name)}</td>"
        + "".join(f"<td>{c.cell(scores.get(c.key))}</td>" for c in columns)
        + "</tr>"
        for name, scores in utt.scores.items()
    )
    return f"<details><summary>scores of every system</summary><table><tr><th>system</th>{head}</tr>{body}</table></details>"
