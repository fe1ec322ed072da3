"""The console model (R37-R46): the telemetry event log folded into the Instances, Modules and Agents
views. Pure: plain values in (`events`), plain values out (`views`)."""

from ggmodules.core.console.model import ConsoleModel, fold

__all__ = ["ConsoleModel", "fold"]
