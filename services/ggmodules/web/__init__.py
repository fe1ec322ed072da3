"""The web console: the Instances, Modules and Agents views of a run in a browser, live, read from
Telemetry's public RPCs (`ggmodules web`)."""
