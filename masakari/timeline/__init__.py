"""A recovery as a timeline: its tasks, host fencing calls and instances, with times,
results and durations.

``load`` reads one notification's rows (its recovery tasks, fence attempts and vmoves, and
the evidence its host failure was judged on); ``text`` prints them for a terminal and
``html`` draws them as one self-contained page (inline SVG, no script, no external
resource): one bar per task, per fence attempt and per instance over time, coloured by
result, and a mark per piece of evidence. ``masakari-manage notification show UUID [--html
FILE]`` uses both.
"""

from masakari.timeline.model import Bar, Timeline, load
from masakari.timeline.page import html
from masakari.timeline.text import text

__all__ = ["Bar", "Timeline", "html", "load", "text"]
