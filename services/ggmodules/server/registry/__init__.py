"""The Registry service: runs, profiles, FSM definitions, agent instances and their rosters."""
