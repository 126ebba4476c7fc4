"""Render a profile dict (:func:`tessera.toolchain.profile.build_profile`) as a PNG and an HTML page.

The PNG has three panels: (a) the BSP timeline — one row per tile, compute / sync / exchange
segments in cycles, superstep boundaries marked; (b) the per-tile memory map (code, control,
tensors, vertex records, exchange programs, free, stacks); (c) the summary table. The HTML
page is self-contained: the PNG is inlined as base64 and the tables (summary, per-superstep
cycles per tile, memory, exchange phases) are plain HTML.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

__all__ = ["render_png", "render_html", "write_profile", "COLORS", "check_profile",
           "ProfileFormatError"]


class ProfileFormatError(ValueError):
    """A dict is not a profile as written by :func:`write_profile` (message names the key)."""


#: Top-level keys of a profile and their JSON types (what the renderers read).
_SCHEMA = {"title": str, "config": dict, "cycles": int, "tiles": list, "supersteps": list,
           "memory": list, "exchanges": list, "summary": list}
_TILE_KEYS = {"tile": int, "counters": dict, "segments": list}
_SEG_KEYS = {"kind": str, "start": (int, float), "end": (int, float), "label": str,
             "superstep": int}


def _kind(t) -> str:
    names = {str: "a string", dict: "an object", int: "an integer", list: "a list"}
    if isinstance(t, tuple):
        return "a number"
    return names.get(t, t.__name__)


def check_profile(profile) -> None:
    """Raise :class:`ProfileFormatError` unless ``profile`` has the keys the renderers use.

    The message names the first missing or mistyped key (e.g. ``missing key 'tiles'``,
    ``tiles[0].segments[3].end is not a number``).
    """
    def need(obj, keys, where):
        for k, t in keys.items():
            if k not in obj:
                raise ProfileFormatError(f"missing key {where}{k!r}")
            v = obj[k]
            if not isinstance(v, t) or isinstance(v, bool):
                raise ProfileFormatError(f"{where}{k} is not {_kind(t)}")

    if not isinstance(profile, dict):
        raise ProfileFormatError(f"the top level is {type(profile).__name__}, not an object")
    need(profile, _SCHEMA, "")
    if not isinstance(profile["config"].get("sram_bytes"), int):
        raise ProfileFormatError("missing key config.sram_bytes")
    for i, t in enumerate(profile["tiles"]):
        if not isinstance(t, dict):
            raise ProfileFormatError(f"tiles[{i}] is not an object")
        need(t, _TILE_KEYS, f"tiles[{i}].")
        for j, seg in enumerate(t["segments"]):
            if not isinstance(seg, dict):
                raise ProfileFormatError(f"tiles[{i}].segments[{j}] is not an object")
            need(seg, _SEG_KEYS, f"tiles[{i}].segments[{j}].")
    for i, st in enumerate(profile["supersteps"]):
        if not isinstance(st, dict):
            raise ProfileFormatError(f"supersteps[{i}] is not an object")
        need(st, {"index": int, "label": str, "tiles": list}, f"supersteps[{i}].")
    for i, m in enumerate(profile["memory"]):
        if not isinstance(m, dict):
            raise ProfileFormatError(f"memory[{i}] is not an object")
    for i, r in enumerate(profile["exchanges"]):
        if not isinstance(r, dict):
            raise ProfileFormatError(f"exchanges[{i}] is not an object")
        need(r, {"name": str, "cycles": int, "cycle_bound": int, "words_sent": list,
                 "words_received": list}, f"exchanges[{i}].")
    for i, row in enumerate(profile["summary"]):
        if not isinstance(row, list) or len(row) != 2:
            raise ProfileFormatError(f"summary[{i}] is not an [item, value] pair")

#: Colours of the timeline kinds and memory categories.
COLORS = {
    "compute": "#4C9F70", "sync": "#E4A33A", "exchange": "#3A78C2", "halted": "#9E9E9E",
    "code": "#6A4C93", "control": "#C06C84", "tensors": "#4C9F70", "vertices": "#F8B195",
    "exchange code": "#3A78C2", "stacks": "#E4A33A", "free": "#E8E8E8",
}
_MEM = (("code", "code"), ("control", "control"), ("tensors", "tensors"),
        ("vertices", "vertices"), ("exchange", "exchange code"), ("free", "free"),
        ("stacks", "stacks"))


def _figure(profile: dict):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tiles = profile["tiles"]
    n = len(tiles)
    cycles = max(1, int(profile["cycles"]))
    fig = plt.figure(figsize=(13, 4.2 + 0.45 * n + 0.32 * len(profile["summary"])))
    gs = fig.add_gridspec(3, 1, height_ratios=[1.2 + 0.3 * n, 0.6 + 0.25 * n,
                                                0.25 * len(profile["summary"]) + 0.5],
                          hspace=0.5, top=0.95)
    fig.suptitle(profile["title"], fontsize=13, fontweight="bold", y=0.995)

    # (a) BSP timeline; segments narrower than 0.15 % of the run are widened so they show.
    ax = fig.add_subplot(gs[0])
    minw = cycles * 0.0015
    for row, t in enumerate(tiles):
        for kind in ("compute", "sync", "exchange", "halted"):
            bars = [(s["start"], max(s["end"] - s["start"], minw)) for s in t["segments"]
                    if s["kind"] == kind]
            if bars:
                ax.broken_barh(bars, (row - 0.38, 0.76), facecolors=COLORS[kind],
                               edgecolors="white", linewidth=0.6)
        for s in t["segments"]:          # name the wide compute sets inside their bars
            if s["kind"] == "compute" and s["end"] - s["start"] > 0.07 * cycles:
                ax.text((s["start"] + s["end"]) / 2, row, s["label"], ha="center",
                        va="center", fontsize=7, color="white")
    # superstep boundaries (from tile 0) and labels
    if tiles and profile["supersteps"]:
        ends = {}
        for s in tiles[0]["segments"]:
            ends[s["superstep"]] = max(ends.get(s["superstep"], 0), s["end"])
            ends.setdefault(("start", s["superstep"]), s["start"])
        for st in profile["supersteps"]:
            i = st["index"]
            x0 = ends.get(("start", i), 0)
            x1 = ends.get(i, x0)
            ax.axvline(x1, color="k", lw=0.6, ls=":")
            ax.text((x0 + x1) / 2, n - 0.45, f"superstep {i}\n{st['label'].replace(', ', chr(10))}",
                    ha="center", va="top", fontsize=7)
    ax.set_yticks(range(n), [f"tile {t['tile']}" for t in tiles])
    ax.set_ylim(n + 2.3, -0.6)
    ax.set_xlim(0, cycles)
    ax.set_xlabel("cycle")
    ax.set_title("(a) BSP timeline per tile (superstep marks recorded by the runtime; "
                 "thin segments widened to stay visible)", fontsize=9.5, loc="left")
    ax.legend(handles=[Patch(color=COLORS[k], label=k) for k in ("compute", "sync", "exchange")],
              loc="lower right", fontsize=8, ncol=3, framealpha=0.9)

    # (b) memory map
    ax = fig.add_subplot(gs[1])
    sram = profile["config"]["sram_bytes"]
    for row, m in enumerate(profile["memory"]):
        left = 0
        for key, label in _MEM:
            w = max(0, int(m.get(key, 0)))
            ax.barh(row, w, left=left, color=COLORS[label], edgecolor="white", lw=0.5,
                    height=0.7)
            if w > sram * 0.06:
                ax.text(left + w / 2, row, f"{label}\n{w / 1024:.1f} KiB", ha="center",
                        va="center", fontsize=7)
            left += w
    ax.set_yticks(range(len(profile["memory"])), [f"tile {t}" for t in range(len(profile["memory"]))])
    ax.invert_yaxis()
    ax.set_xlim(0, sram)
    ax.set_xlabel("SRAM byte address")
    ax.set_title(f"(b) memory map per tile ({sram // 1024} KiB SRAM)", fontsize=9.5, loc="left")
    ax.legend(handles=[Patch(color=COLORS[lab], label=lab) for _, lab in _MEM],
              loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=7, fontsize=8, frameon=False)

    # (c) summary table
    ax = fig.add_subplot(gs[2])
    ax.axis("off")
    ax.set_title("(c) summary", fontsize=9.5, loc="left")
    tab = ax.table(cellText=[[a, b] for a, b in profile["summary"]], colWidths=[0.3, 0.7],
                   cellLoc="left", loc="upper left")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8.5)
    tab.scale(1, 1.25)
    for (r, c), cell in tab.get_celld().items():
        cell.set_edgecolor("#CCCCCC")
        if c == 0:
            cell.set_text_props(fontweight="bold")
    return fig


def render_png(profile: dict, path) -> Path:
    """Write the three-panel PNG; returns its path."""
    import matplotlib.pyplot as plt
    path = Path(path)
    fig = _figure(profile)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _table(header, rows) -> str:
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def render_html(profile: dict, png_path, path) -> Path:
    """Write a self-contained HTML page (PNG inlined as base64, tables in HTML)."""
    path = Path(path)
    png64 = base64.b64encode(Path(png_path).read_bytes()).decode("ascii")
    parts = [f"<h1>{html.escape(profile['title'])}</h1>",
             f'<img alt="profile" src="data:image/png;base64,{png64}">',
             "<h2>Summary</h2>", _table(("item", "value"), profile["summary"])]
    rows = []
    for st in profile["supersteps"]:
        for t, c in enumerate(st["tiles"]):
            tot = c["compute"] + c["sync"] + c["exchange"]
            rows.append((st["index"], st["label"], t, c["compute"], c["sync"], c["exchange"], tot))
    if rows:
        parts += ["<h2>Supersteps (cycles per tile, from the runtime's marks)</h2>",
                  _table(("superstep", "compute sets / exchange", "tile", "compute", "sync",
                          "exchange", "total"), rows)]
    parts += ["<h2>Hardware counters (per tile, profiled run)</h2>",
              _table(("tile", "compute", "sync", "exchange", "halted", "retired", "macs"),
                     [(t["tile"], *(t["counters"].get(k, 0) for k in
                                    ("compute", "sync", "exchange", "halted", "retired", "macs")))
                      for t in profile["tiles"]])]
    keys = [k for k, _ in _MEM] + ["used"]
    parts += ["<h2>Memory (bytes per tile)</h2>",
              _table(("tile", *[k if k != "exchange" else "exchange code" for k in keys]),
                     [(t, *(m.get(k, 0) for k in keys)) for t, m in enumerate(profile["memory"])])]
    if profile["exchanges"]:
        parts += ["<h2>Exchange phases</h2>",
                  _table(("phase", "cycles", "bound", "bound met", "words sent per tile",
                          "words received per tile"),
                         [(r["name"], r["cycles"], r["cycle_bound"], r["bound_met"],
                           r["words_sent"], r["words_received"]) for r in profile["exchanges"]])]
    style = ("body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
             "img{max-width:100%;border:1px solid #ddd}"
             "table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
             "th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}")
    data = html.escape(json.dumps({k: profile[k] for k in ("title", "cycles", "summary",
                                                           "supersteps", "memory")}))
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(profile['title'])}</title><style>{style}</style></head><body>"
            + "\n".join(parts)
            + f"<script type='application/json' id='profile-data'>{data}</script></body></html>")
    path.write_text(page, encoding="utf-8")
    return path


def write_profile(profile: dict, out_dir, stem: str = "profile") -> dict:
    """Write ``<stem>.png``, ``<stem>.html`` and ``<stem>.json`` into ``out_dir``.

    Returns
    -------
    dict
        ``{"png": Path, "html": Path, "json": Path}``.

    Raises
    ------
    OSError
        The directory cannot be created or written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = render_png(profile, out / f"{stem}.png")
    page = render_html(profile, png, out / f"{stem}.html")
    js = out / f"{stem}.json"
    js.write_text(json.dumps(profile, indent=1))
    return {"png": png, "html": page, "json": js}
