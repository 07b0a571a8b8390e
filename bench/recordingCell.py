"""The Google-cell front-end, recording every message Batsim sends it (for ``bench.protocol``).

pybatsim loads a scheduler file by its name (``recordingCell.py`` -> ``RecordingCell``). Its
option ``record`` names the file that receives Batsim's messages, one JSON line each, as they
came; the other options are :class:`~batsim_google.simulation.googleCell.GoogleCell`'s.
"""

from __future__ import annotations

from batsim.network import NetworkHandler

from batsim_google.simulation.googleCell import GoogleCell


class RecordingCell(GoogleCell):
    def __init__(self, options: dict | None = None) -> None:
        options = dict(options or {})
        record = open(options.pop("record"), "w", encoding="utf-8")  # noqa: SIM115 (open for the whole run)
        receive = NetworkHandler.recv_string

        def recv_string(network: NetworkHandler, blocking: bool = False) -> str | None:
            message = receive(network, blocking=blocking)
            if message is not None:
                record.write(message)
                record.write("\n")
            return message

        NetworkHandler.recv_string = recv_string  # Batsim's handler is made after this scheduler
        self._record = record
        super().__init__(options)

    def onSimulationEnds(self) -> None:
        super().onSimulationEnds()
        self._record.close()
