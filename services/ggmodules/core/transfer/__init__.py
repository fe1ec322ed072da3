"""The Transfer domain: what a successor gets per kind (R19-R24, R35), and its opening note."""
