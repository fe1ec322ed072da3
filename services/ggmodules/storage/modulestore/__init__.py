"""ModuleStore persistence: its tables (prefix `ms_`) and the repository over them."""
