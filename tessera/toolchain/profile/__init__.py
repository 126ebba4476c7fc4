"""PopVision-style profiles of graph runs: BSP timeline, memory map, summary (PNG + HTML).

Typical use (what ``tessera demo --profile`` does)::

    compiled = compile_graph(graph, program, profile=prof_var)   # runtime records superstep marks
    eng = Engine(compiled, backend="rtl"); result = eng.run()
    profile = build_profile(compiled, result, eng.read_tensor(prof_var.name), title="digits")
    write_profile(profile, "out/")          # out/profile.png, out/profile.html, out/profile.json

``tessera profile --from out/profile.json`` re-renders a saved profile.
"""

from .collect import ProfileError, build_profile, decode_marks
from .render import ProfileFormatError, check_profile, render_html, render_png, write_profile

__all__ = ["build_profile", "decode_marks", "ProfileError", "render_png", "render_html",
           "write_profile", "check_profile", "ProfileFormatError"]
