"""How often the Live page reads and draws: briskly between runs, slowly while a run is measured.

On a small host the app shares the cores with the server it measures (a vLLM CPU build takes
them all), so during a measurement window the page reads the database and redraws once a second,
all at once, and not at all while hidden: the app then stays under 5 % of one core, which the
runner checks and records per run (`app_cpu_s`).
"""

from __future__ import annotations

from workbench import events

MEASURING_HZ = 1
MEASURING_MS = 1000 // MEASURING_HZ
POLL_MS = 250   # between runs: the database is read four times a second
DRAW_MS = 66    # and one chart with new data is redrawn about 15 times a second (one at a time)
NOTE = (f"Drawing slowed to {MEASURING_HZ} Hz during measurement so the app stays under 5 % of a core")


class Pace:
    """Whether a run of the sweep followed is being measured, from its events: from a run's start
    (its warm-up, then its window) to its end, for every run in flight (a parallel sweep has several)."""

    def __init__(self) -> None:
        self.in_flight: set[int] = set()

    @property
    def measuring(self) -> bool:
        return bool(self.in_flight)

    def on_event(self, event: events.Event) -> bool:
        """True when the event starts or ends the measuring."""
        before = self.measuring
        if isinstance(event, events.RunStarted):
            self.in_flight.add(event.run)
        elif isinstance(event, (events.RunFinished, events.RunFailed)):
            self.in_flight.discard(event.run)
        elif isinstance(event, (events.SweepStarted, events.SweepFinished)):
            self.in_flight.clear()
        return self.measuring != before

    @property
    def poll_ms(self) -> int:
        return MEASURING_MS if self.measuring else POLL_MS
