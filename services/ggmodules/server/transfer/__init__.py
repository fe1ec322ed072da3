"""The Transfer service: hands a predecessor's live modules to its successor, atomically and exactly once."""
